//! The terminal front end of typhon-live: the screen `attach` and
//! `view FILE` show, drawn from the view model (`typhon-live-model`), and
//! the keys that move its window. All ratatui code is here; the model
//! imports none, so consumers without a terminal (`--json`, the browser)
//! share it.
//!
//! - [`app::Screen`] owns the terminal and draws a frame of the model.
//! - [`ui_state`] is what the keys change: live or paused, the window.
//! - [`widgets`] draws the timeline and the span tables.
//! - [`uptime`] is the clock the front ends pass to the model.
#![deny(missing_docs)]

pub mod action;
pub mod app;
pub mod keymap;
pub mod ui_state;
pub mod uptime;
pub mod view;
pub mod widgets;

#[cfg(test)]
mod testing;
