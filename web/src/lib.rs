//! The browser viewer: the view model (`typhon-live-model`) drawn as an
//! egui timeline, compiled to WebAssembly and served by the relay
//! (`typhon-live-relay`'s `page`).
//!
//! The bytes of a tab's WebSocket go through [`feed`] into the same
//! reader and model as the terminal's; [`view`] is what the person
//! chose to look at (the window, pause, the selected name, the search);
//! [`timeline`] lays out the visible window and paints it; [`selection`]
//! is the statistics of the selected name; [`page`] puts it together for
//! one frame of egui. Only the runner (`browser`, wasm32) touches the
//! browser: natively, every part runs headless under test.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod feed;
pub mod page;
pub mod selection;
pub mod timeline;
pub mod view;

#[cfg(target_arch = "wasm32")]
mod browser;
