//! All ratatui code: the live view drawn from the model's summary. Nothing
//! in `model/` imports ratatui, so a consumer without a terminal (the
//! relay, `--json`) reuses the model.

pub mod action;
pub mod app;
pub mod keymap;
pub mod ui_state;
pub mod view;
pub mod widgets;
