//! The page's worker: the tab's WebSocket, its bytes into the stream's
//! reading ([`Source`]), and the answers to the page's asks. It never
//! waits for the page's drawing: the socket is read as its messages
//! come, whatever the main thread is doing.
//!
//! An ask is answered at once when the stream brought something or the
//! person did something; otherwise after [`LIVE_REPAINT`] (live, so that
//! an open span grows and the window moves) or [`PAUSED_REPAINT`]
//! (paused: the figures in the header move on).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{BinaryType, CloseEvent, DedicatedWorkerGlobalScope, MessageEvent, WebSocket};

use typhon_live_reader::carry::END_OF_FILE;

use super::{clock, READY};
use crate::scene::{Ask, Message};
use crate::source::Source;

/// Live, an answer at least this often.
const LIVE_REPAINT: Duration = Duration::from_millis(33);
/// Paused, an answer at least this often.
const PAUSED_REPAINT: Duration = Duration::from_millis(250);
/// Waited before connecting again after the socket closed.
const RETRY: Duration = Duration::from_secs(1);

/// The worker's state.
struct Reading {
    source: Source,
    scope: DedicatedWorkerGlobalScope,
    /// The page's clock's origin (its `performance.timeOrigin`).
    origin: f64,
    /// The page's ask, not yet answered.
    ask: Option<Ask>,
    /// The stream brought something since the last answer.
    news: bool,
    /// When the last answer went.
    answered_at: Duration,
    /// A timer is set to answer.
    timer: bool,
}

type Shared = Rc<RefCell<Reading>>;

impl Reading {
    /// The page's clock.
    fn now(&self) -> Duration {
        clock(self.scope.performance().as_ref(), self.origin)
    }
}

/// Answers the page's ask if it is due; if it will be, sets a timer.
fn answer(shared: &Shared) {
    let mut reading = shared.borrow_mut();
    let Some(ask) = &reading.ask else { return };
    let now = reading.now();
    let urgent = !ask.actions.is_empty() || ask.hook;
    let quiet = match reading.source.view.is_paused() {
        true => PAUSED_REPAINT,
        // Live, what came is shown at once.
        false if reading.news => Duration::ZERO,
        false => LIVE_REPAINT,
    };
    let wait = match urgent {
        true => Duration::ZERO,
        false => quiet.saturating_sub(now.saturating_sub(reading.answered_at)),
    };
    if !wait.is_zero() {
        if !reading.timer {
            reading.timer = true;
            let shared = Rc::clone(shared);
            let again = Closure::once_into_js(move || {
                shared.borrow_mut().timer = false;
                answer(&shared);
            });
            let _ = reading
                .scope
                .set_timeout_with_callback_and_timeout_and_arguments_0(
                    again.unchecked_ref(),
                    wait.as_millis() as i32 + 1,
                );
        }
        return;
    }
    let Some(ask) = reading.ask.take() else {
        return;
    };
    let scene = reading.source.answer(ask, now).to_bytes();
    reading.news = false;
    reading.answered_at = now;
    let bytes = js_sys::Uint8Array::from(&scene[..]);
    let transfer = js_sys::Array::of1(&bytes.buffer());
    if let Err(error) = reading.scope.post_message_with_transfer(&bytes, &transfer) {
        web_sys::console::error_1(&error);
    }
}

/// Opens the stream's socket at `url`; when it closes, opens it again
/// after [`RETRY`].
fn connect(shared: Shared, url: String) {
    let socket = match WebSocket::new(&url) {
        Ok(socket) => socket,
        Err(_) => return retry(shared, url.clone(), format!("cannot open {url}")),
    };
    socket.set_binary_type(BinaryType::Arraybuffer);
    let on_open = {
        let (shared, url) = (Rc::clone(&shared), url.clone());
        Closure::<dyn FnMut()>::new(move || {
            shared.borrow_mut().source.connected(url.clone());
            shared.borrow_mut().news = true;
            answer(&shared);
        })
    };
    let on_message = {
        let (shared, socket) = (Rc::clone(&shared), socket.clone());
        Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            if let Ok(buffer) = event.data().dyn_into::<js_sys::ArrayBuffer>() {
                {
                    let mut reading = shared.borrow_mut();
                    let began = reading.now();
                    let bytes = js_sys::Uint8Array::new(&buffer).to_vec();
                    // The browser's Unix clock: the stream's times placed
                    // on it (how fresh the flame graph is, say).
                    let received = (js_sys::Date::now() * 1e6) as u64;
                    let said = reading.source.take(&bytes, began, Some(received));
                    let took = reading.now().saturating_sub(began);
                    reading.source.ingest_took(took);
                    reading.news = true;
                    // Unsaid, the server sends no more once a megabyte is
                    // unread (FORMAT.md, "Carrying a stream").
                    if let Some(said) = said {
                        let _ = socket.send_with_str(&said);
                    }
                }
                answer(&shared);
            }
        })
    };
    let on_close = {
        let (shared, url) = (Rc::clone(&shared), url.clone());
        Closure::<dyn FnMut(CloseEvent)>::new(move |event: CloseEvent| {
            if event.code() == 1000 && event.reason() == END_OF_FILE {
                {
                    let mut reading = shared.borrow_mut();
                    let now = reading.now();
                    reading.source.file_ended(now);
                    reading.news = true;
                }
                return answer(&shared);
            }
            let reason = match event.reason() {
                r if r.is_empty() => format!("closed ({})", event.code()),
                r => r,
            };
            retry(Rc::clone(&shared), url.clone(), reason);
        })
    };
    socket.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    socket.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    socket.set_onclose(Some(on_close.as_ref().unchecked_ref()));
    // The handlers live as long as the socket: one set per connection.
    on_open.forget();
    on_message.forget();
    on_close.forget();
}

fn retry(shared: Shared, url: String, reason: String) {
    {
        let mut reading = shared.borrow_mut();
        reading.source.disconnected(reason, RETRY);
        reading.news = true;
    }
    answer(&shared);
    let scope = shared.borrow().scope.clone();
    let again = Closure::once_into_js(move || connect(shared, url));
    let _ = scope.set_timeout_with_callback_and_timeout_and_arguments_0(
        again.unchecked_ref(),
        RETRY.as_millis() as i32,
    );
}

/// The page's first message, read: where the stream is, the page's
/// clock's origin, the history's budget.
fn field(start: &JsValue, key: &str) -> JsValue {
    js_sys::Reflect::get(start, &key.into()).unwrap_or(JsValue::UNDEFINED)
}

/// Starts the worker with the page's first message (`worker.js` hands
/// it over), then says it is ready for asks.
#[wasm_bindgen]
pub fn start_worker(start: JsValue) {
    let Ok(scope) = js_sys::global().dyn_into::<DedicatedWorkerGlobalScope>() else {
        return;
    };
    let origin = field(&start, "origin").as_f64().unwrap_or(0.0);
    let history = field(&start, "history").as_f64().unwrap_or(0.0) as usize;
    let shared = Rc::new(RefCell::new(Reading {
        source: Source::new(history),
        scope: scope.clone(),
        origin,
        ask: None,
        news: false,
        answered_at: Duration::ZERO,
        timer: false,
    }));
    let on_ask = {
        let shared = Rc::clone(&shared);
        Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            let Ok(bytes) = event.data().dyn_into::<js_sys::Uint8Array>() else {
                return;
            };
            match Ask::from_bytes(&bytes.to_vec()) {
                Ok(ask) => shared.borrow_mut().ask = Some(ask),
                Err(error) => {
                    // Never from our own page; said, and answered as if
                    // nothing was asked, so that the page asks again.
                    let said = format!("the page's ask did not read: {error}");
                    web_sys::console::error_1(&said.into());
                    shared.borrow_mut().ask = Some(Ask::default());
                }
            }
            answer(&shared);
        })
    };
    scope.set_onmessage(Some(on_ask.as_ref().unchecked_ref()));
    on_ask.forget();
    match field(&start, "url").as_string() {
        Some(url) => connect(Rc::clone(&shared), url),
        None => {
            let reason = "the page's address is not http".to_owned();
            shared.borrow_mut().source.disconnected(reason, RETRY);
        }
    }
    let _ = scope.post_message(&READY.into());
}
