//! All ratatui code: the live view drawn from the model's summary. Nothing
//! in `model/` imports ratatui, so a consumer without a terminal (the
//! relay, `--json`) reuses the model.

pub mod view;
pub mod widgets;
