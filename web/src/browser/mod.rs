//! The page in a browser, on two threads:
//! - [`main_thread`]: eframe's runner on the page's canvas, the worker
//!   started beside it, and the test hook;
//! - [`worker`]: the tab's WebSocket to the server that served the page,
//!   and the stream's reading ([`crate::source`]).
//!
//! The main thread sends the worker where the stream is and the page's
//! clock, then asks after each frame; the worker says `ready`, then
//! answers each ask with a scene ([`crate::scene`]). Both are the same
//! wasm module, each instance with its own memory.

mod main_thread;
mod worker;

use std::time::Duration;

/// A clock in the page's time: `performance.now()` of `performance`,
/// less `origin`'s offset from its own origin (a worker's clock starts
/// when the worker does; the page's, when the page opened).
fn clock(performance: Option<&web_sys::Performance>, origin: f64) -> Duration {
    let ms = performance.map_or(0.0, |p| p.time_origin() - origin + p.now());
    Duration::from_secs_f64(ms.max(0.0) / 1e3)
}

/// The worker's script, beside the page.
const WORKER_SCRIPT: &str = "./worker.js";
/// The worker's first word: it reads asks from now on.
const READY: &str = "ready";
