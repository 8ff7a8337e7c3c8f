//! All ratatui code: the screen `attach` and `view FILE` show, drawn from
//! the model, and the keys that move its window. Nothing in `model/`
//! imports ratatui, so a consumer without a terminal (the relay, `--json`)
//! reuses the model.

pub mod action;
pub mod app;
pub mod keymap;
pub mod ui_state;
pub mod view;
pub mod widgets;
