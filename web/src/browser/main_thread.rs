//! The page's main thread: eframe's runner on the canvas, drawing the
//! worker's latest scene, and the worker's messages. Each answer asks
//! for a frame, and each frame asks again (the worker answers at once
//! when there is news, else after a pause: see `worker`); a slow
//! rasterizer only makes the asks fewer.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{MessageEvent, Worker, WorkerOptions, WorkerType};

use super::{clock, READY, WORKER_SCRIPT};
use crate::page::Page;
use crate::scene::{Message, Scene};
use crate::source::DEFAULT_HISTORY_BYTES;

thread_local! {
    /// The page, shared by the runner, the worker's handler and the hook.
    static PAGE: RefCell<Option<Rc<RefCell<Tab>>>> = const { RefCell::new(None) };
    /// Milliseconds each of the last frames took to build and paint.
    static FRAME_MS: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// The page and its worker.
struct Tab {
    page: Page,
    worker: Worker,
    /// The worker said it reads asks.
    ready: bool,
}

impl Tab {
    /// Sends the page's ask, if one is due.
    fn ask(&mut self) {
        if !self.ready {
            return;
        }
        if let Some(ask) = self.page.ask() {
            let bytes = js_sys::Uint8Array::from(&ask.to_bytes()[..]);
            let transfer = js_sys::Array::of1(&bytes.buffer());
            if let Err(error) = self.worker.post_message_with_transfer(&bytes, &transfer) {
                web_sys::console::error_1(&error);
            }
        }
    }
}

/// The page's clock: `performance.now()`, since the page opened.
fn now() -> std::time::Duration {
    let performance = web_sys::window().and_then(|w| w.performance());
    let origin = performance.as_ref().map_or(0.0, |p| p.time_origin());
    clock(performance.as_ref(), origin)
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
    tab: Rc<RefCell<Tab>>,
}

impl eframe::App for App {
    fn update(&mut self, ctx: &egui::Context, _frame: &mut eframe::Frame) {
        let began = now();
        let mut tab = self.tab.borrow_mut();
        tab.page.ui(ctx, began);
        tab.ask();
        if let Some(bytes) = tab.page.take_download() {
            download(&bytes);
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

/// Starts the worker, telling it where the stream is, the page's clock
/// and the history's budget; its answers go to `tab` and ask `ctx` for a
/// frame.
fn start_worker(tab: &Rc<RefCell<Tab>>, ctx: egui::Context) {
    let worker = tab.borrow().worker.clone();
    let on_message = {
        let tab = Rc::clone(tab);
        Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            let data = event.data();
            let mut tab = tab.borrow_mut();
            if data.as_string().as_deref() == Some(READY) {
                tab.ready = true;
            } else if let Ok(bytes) = data.dyn_into::<js_sys::Uint8Array>() {
                match Scene::from_bytes(&bytes.to_vec()) {
                    Ok(scene) => tab.page.show(scene),
                    Err(error) => {
                        // Never from our own worker; said, and asked again.
                        let said = format!("the worker's scene did not read: {error}");
                        web_sys::console::error_1(&said.into());
                        tab.page.show(Scene::default());
                    }
                }
            }
            ctx.request_repaint();
        })
    };
    let on_error = {
        let tab = Rc::clone(tab);
        Closure::<dyn FnMut(web_sys::ErrorEvent)>::new(move |event: web_sys::ErrorEvent| {
            let said = format!("the page's worker failed: {}", event.message());
            web_sys::console::error_1(&said.clone().into());
            tab.borrow_mut().page.worker_failed(said);
        })
    };
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    // The handlers live as long as the page.
    on_message.forget();
    on_error.forget();
    let start = js_sys::Object::new();
    let origin = web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.time_origin());
    let url = stream_url().map_or(JsValue::NULL, JsValue::from);
    let fields = [
        ("url", url),
        ("origin", origin.into()),
        ("history", (history_bytes() as f64).into()),
    ];
    for (key, value) in fields {
        let _ = js_sys::Reflect::set(&start, &key.into(), &value);
    }
    if let Err(error) = worker.post_message(&start) {
        web_sys::console::error_1(&error);
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

/// Starts the page on the canvas `#typhon`, and its worker.
#[wasm_bindgen]
pub fn start_page() {
    let Some(canvas) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id("typhon"))
        .and_then(|e| e.dyn_into::<web_sys::HtmlCanvasElement>().ok())
    else {
        return;
    };
    let options = WorkerOptions::new();
    options.set_type(WorkerType::Module);
    let worker = match Worker::new_with_options(WORKER_SCRIPT, &options) {
        Ok(worker) => worker,
        Err(error) => return web_sys::console::error_1(&error),
    };
    claim_context(&canvas);
    let tab = Rc::new(RefCell::new(Tab {
        page: Page::new(),
        worker,
        ready: false,
    }));
    PAGE.with(|p| *p.borrow_mut() = Some(Rc::clone(&tab)));
    wasm_bindgen_futures::spawn_local(async move {
        let runner = eframe::WebRunner::new();
        let started = runner
            .start(
                canvas,
                eframe::WebOptions::default(),
                Box::new(move |cc| {
                    start_worker(&tab, cc.egui_ctx.clone());
                    Ok(Box::new(App { tab }))
                }),
            )
            .await;
        if let Err(error) = started {
            web_sys::console::error_1(&error);
        }
    });
}

/// The test hook: the page's state as JSON (see `Page::hook`; the
/// stream's side as the worker last said it), with the frame times so
/// far.
#[wasm_bindgen]
pub fn summary() -> String {
    let tab = PAGE.with(|p| p.borrow().clone());
    let Some(tab) = tab else {
        return "null".into();
    };
    let mut tab = tab.borrow_mut();
    let hook = tab.page.hook();
    // The stream's side comes with the next answer.
    tab.ask();
    let frame_ms = FRAME_MS.with(|f| serde_json::to_string(&*f.borrow()).unwrap_or_default());
    format!("{{\"page\":{hook},\"frame_ms\":{frame_ms}}}")
}
