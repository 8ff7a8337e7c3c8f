//! The page in a browser: eframe's runner on the page's canvas, the
//! tab's WebSocket to the server that served it, and the test hook.
//!
//! Everything runs on the page's one thread: the socket's messages go
//! into the model as they arrive, and egui draws when asked (a message
//! asks for a repaint; live, the picture is redrawn at most every
//! [`LIVE_REPAINT`] so that an open span grows).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{BinaryType, CloseEvent, MessageEvent, WebSocket};

use typhon_live_reader::carry::END_OF_FILE;

use crate::page::{Page, DEFAULT_HISTORY_BYTES};

/// Live, a frame at least this often.
const LIVE_REPAINT: Duration = Duration::from_millis(33);
/// Waited before connecting again after the socket closed.
const RETRY: Duration = Duration::from_secs(1);

thread_local! {
    /// The page, shared by the runner, the socket's handlers and the hook.
    static PAGE: RefCell<Option<Rc<RefCell<Page>>>> = const { RefCell::new(None) };
    /// Milliseconds each of the last frames took to build and paint.
    static FRAME_MS: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// The browser's clock: `performance.now()`, since the page opened.
fn now() -> Duration {
    let ms = web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now());
    Duration::from_secs_f64(ms.max(0.0) / 1e3)
}

/// The stream's address: `stream` beside the page, over `ws:`.
fn stream_url() -> Option<String> {
    let href = web_sys::window()?.location().href().ok()?;
    let base = href.split(['?', '#']).next()?;
    let dir = &base[..base.rfind('/')? + 1];
    Some(format!("ws{}stream", dir.strip_prefix("http")?))
}

/// `?history=MiB`, else the default.
fn history_bytes() -> usize {
    let search = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
    search
        .trim_start_matches('?')
        .split('&')
        .find_map(|kv| kv.strip_prefix("history="))
        .and_then(|mib| mib.parse::<usize>().ok())
        .map_or(DEFAULT_HISTORY_BYTES, |mib| mib.saturating_mul(1 << 20))
}

struct App {
    page: Rc<RefCell<Page>>,
}

impl eframe::App for App {
    fn update(&mut self, ctx: &egui::Context, _frame: &mut eframe::Frame) {
        let began = now();
        let mut page = self.page.borrow_mut();
        page.ui(ctx, began);
        if let Some(bytes) = page.take_download() {
            download(&bytes);
        }
        if !page.view.is_paused() {
            ctx.request_repaint_after(LIVE_REPAINT);
        }
        let took = now().saturating_sub(began).as_secs_f64() * 1e3;
        FRAME_MS.with(|f| {
            let mut f = f.borrow_mut();
            if f.len() >= 4096 {
                f.drain(..2048);
            }
            f.push(took);
        });
    }
}

/// Offers `bytes` as a file download, `capture-UNIXMS.tlt`: a blob, a
/// link to it clicked, the blob let go.
fn download(bytes: &[u8]) {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("application/octet-stream");
    let Ok(blob) = web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &options) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    if let Ok(link) = document.create_element("a") {
        if let Ok(link) = link.dyn_into::<web_sys::HtmlAnchorElement>() {
            link.set_href(&url);
            link.set_download(&format!("capture-{}.tlt", js_sys::Date::now() as u64));
            link.click();
        }
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}

/// Opens the stream's socket; when it closes, opens it again after
/// [`RETRY`].
fn connect(page: Rc<RefCell<Page>>, ctx: egui::Context) {
    let Some(url) = stream_url() else {
        page.borrow_mut()
            .disconnected("the page's address is not http".into(), RETRY);
        return;
    };
    let socket = match WebSocket::new(&url) {
        Ok(socket) => socket,
        Err(_) => return retry(page, ctx, format!("cannot open {url}")),
    };
    socket.set_binary_type(BinaryType::Arraybuffer);
    let on_open = {
        let (page, ctx, url) = (Rc::clone(&page), ctx.clone(), url.clone());
        Closure::<dyn FnMut()>::new(move || {
            page.borrow_mut().connected(url.clone());
            ctx.request_repaint();
        })
    };
    let on_message = {
        let (page, ctx, socket) = (Rc::clone(&page), ctx.clone(), socket.clone());
        Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            if let Ok(buffer) = event.data().dyn_into::<js_sys::ArrayBuffer>() {
                let began = now();
                let bytes = js_sys::Uint8Array::new(&buffer).to_vec();
                let mut page = page.borrow_mut();
                let said = page.take(&bytes, began);
                page.ingest_took(now().saturating_sub(began));
                // Unsaid, the server sends no more once a megabyte is
                // unread (FORMAT.md, "Carrying a stream").
                if let Some(said) = said {
                    let _ = socket.send_with_str(&said);
                }
                ctx.request_repaint();
            }
        })
    };
    let on_close = {
        let (page, ctx) = (Rc::clone(&page), ctx.clone());
        Closure::<dyn FnMut(CloseEvent)>::new(move |event: CloseEvent| {
            if event.code() == 1000 && event.reason() == END_OF_FILE {
                page.borrow_mut().file_ended(now());
                return ctx.request_repaint();
            }
            let reason = match event.reason() {
                r if r.is_empty() => format!("closed ({})", event.code()),
                r => r,
            };
            retry(Rc::clone(&page), ctx.clone(), reason);
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

fn retry(page: Rc<RefCell<Page>>, ctx: egui::Context, reason: String) {
    page.borrow_mut().disconnected(reason, RETRY);
    ctx.request_repaint();
    let again = Closure::once_into_js(move || connect(page, ctx));
    if let Some(window) = web_sys::window() {
        let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(
            again.unchecked_ref(),
            RETRY.as_millis() as i32,
        );
    }
}

/// Creates the canvas's WebGL2 context before eframe asks for one (a
/// canvas has one context: eframe's request gets this one), without
/// what egui does not use. Its default multisampling would draw every
/// pixel four times, which a software rasterizer (SwiftShader, a machine
/// without a GPU) pays on the CPU the page shares; egui smooths its own
/// edges. No depth or stencil buffer either: egui draws in order.
fn claim_context(canvas: &web_sys::HtmlCanvasElement) {
    let options = js_sys::Object::new();
    for (key, value) in [("antialias", false), ("depth", false), ("stencil", false)] {
        let _ = js_sys::Reflect::set(&options, &key.into(), &value.into());
    }
    // Without WebGL2, eframe falls back to WebGL1 with its defaults.
    let _ = canvas.get_context_with_context_options("webgl2", &options);
}

/// Starts the page on the canvas `#typhon`.
#[wasm_bindgen(start)]
pub fn start() {
    let Some(canvas) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id("typhon"))
        .and_then(|e| e.dyn_into::<web_sys::HtmlCanvasElement>().ok())
    else {
        return;
    };
    claim_context(&canvas);
    let page = Rc::new(RefCell::new(Page::new(history_bytes())));
    PAGE.with(|p| *p.borrow_mut() = Some(Rc::clone(&page)));
    wasm_bindgen_futures::spawn_local(async move {
        let runner = eframe::WebRunner::new();
        let started = runner
            .start(
                canvas,
                eframe::WebOptions::default(),
                Box::new(move |cc| {
                    connect(Rc::clone(&page), cc.egui_ctx.clone());
                    Ok(Box::new(App { page }))
                }),
            )
            .await;
        if let Err(error) = started {
            web_sys::console::error_1(&error);
        }
    });
}

/// The test hook: the page's state as JSON (see `Page::hook`), with the
/// frame times so far.
#[wasm_bindgen]
pub fn summary() -> String {
    let page = PAGE.with(|p| p.borrow().clone());
    let Some(page) = page else {
        return "null".into();
    };
    let hook = page.borrow_mut().hook(now());
    let frame_ms = FRAME_MS.with(|f| serde_json::to_string(&*f.borrow()).unwrap_or_default());
    format!("{{\"page\":{hook},\"frame_ms\":{frame_ms}}}")
}
