//! The browser viewer: the view model (`typhon-live-model`) drawn as an
//! egui timeline, compiled to WebAssembly and served by the relay
//! (`typhon-live-relay`'s `page`).
//!
//! The page has two threads. A Web Worker holds the tab's WebSocket: its
//! bytes go through [`feed`] into the same reader and model as the
//! terminal's, and [`source`] keeps the [`view`] (the window, pause, the
//! selected name, the searches), lays out the visible window
//! ([`timeline`]) and asks the model for the selected name's detail
//! (`typhon_live_model::NameDetail`) and a selection's sampled stacks,
//! laid out as a flame graph ([`flame`]). The main thread's [`page`] draws what the worker
//! sends ([`scene`]) with egui, and sends back what the person did. Only
//! the runners (`browser`, wasm32) touch the browser: natively, both
//! halves run headless under test, speaking the same bytes.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod feed;
pub mod flame;
pub mod page;
pub mod scene;
pub mod source;
pub mod timeline;
pub mod view;

#[cfg(target_arch = "wasm32")]
mod browser;
