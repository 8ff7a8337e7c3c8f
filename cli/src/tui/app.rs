//! The terminal screen both `attach` and `view FILE` drive: it draws the
//! model (the timeline as [`UiState`] says, and the summary panels) and
//! turns keys into actions on the view state. Drawing reads the model; the
//! only state keys change is the view's.

use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event};
use ratatui::DefaultTerminal;

use crate::error::CliError;
use crate::model::history;
use crate::model::Model;
use crate::tui::keymap::{self, KEYS};
use crate::tui::ui_state::{Scene, UiState};
use crate::tui::view::{self, Panes};
use crate::tui::widgets::span_stats::SpanDetail;
use crate::tui::widgets::span_table::SpanTable;
use crate::tui::widgets::timeline::{lanes_of, Timeline};

/// The full-screen terminal UI.
pub struct Screen {
    terminal: DefaultTerminal,
    /// Live or paused, and the window.
    pub ui: UiState,
}

impl Screen {
    /// Takes over the terminal (raw mode, alternate screen).
    pub fn open() -> Result<Screen, CliError> {
        let terminal = ratatui::try_init().map_err(|e| CliError::Terminal(e.to_string()))?;
        Ok(Screen {
            terminal,
            ui: UiState::default(),
        })
    }

    /// Draws `model` as of `now`.
    pub fn draw(&mut self, model: &mut Model, now: Instant) {
        let summary = model.summary(now);
        let inputs = model.timeline_inputs(now);
        let list = self.ui.span_list(&summary.span_stats);
        let ids: Vec<u32> = list.iter().map(|s| s.id).collect();
        let scene = Scene {
            chunks: &inputs.chunks,
            now: inputs.now,
            ticks_per_second: inputs.ticks_per_second,
            spans: &ids,
        };
        let (start, end, chunks) = self.ui.window(&scene);
        // The selected name's distribution, over what the window draws
        // from: the live history, or what a pause pinned.
        let selected = self.ui.selected_row(list.len());
        let distribution =
            selected.map(|row| history::distribution(chunks.iter().map(|c| &**c), list[row].id));
        let max_tick = distribution.as_ref().and_then(|d| {
            chunks
                .iter()
                .flat_map(|c| c.ticks.iter())
                .find(|t| t.start <= d.max_at && d.max_at <= t.end)
                .map(|t| t.tick)
        });
        let lanes = lanes_of(&inputs);
        let panes = Panes {
            timeline: Timeline {
                chunks,
                lanes: &lanes,
                names: model.names(),
                start,
                end,
                now: inputs.now,
            },
            status: self.ui.status(&scene),
            spans: SpanTable {
                rows: &list,
                selected,
                filter: &self.ui.filter,
                filtering: self.ui.filtering,
            },
            detail: selected
                .zip(distribution.as_ref())
                .map(|(row, d)| SpanDetail {
                    name: &list[row].name,
                    distribution: d,
                    ticks_per_second: inputs.ticks_per_second,
                    max_tick,
                }),
        };
        let _ = self
            .terminal
            .draw(|frame| view::draw(frame, &summary, Some(&panes)));
    }

    /// Reads the keys pressed, waiting up to `wait` for the first, and does
    /// what they ask; whether one asked to quit, and whether any changed
    /// the view.
    pub fn keys(&mut self, model: &Model, wait: Duration) -> (bool, bool) {
        let (mut quit, mut changed) = (false, false);
        let mut wait = wait;
        while event::poll(wait).unwrap_or(false) {
            wait = Duration::ZERO;
            let Ok(Event::Key(key)) = event::read() else {
                continue;
            };
            if self.ui.filtering && key.kind == event::KeyEventKind::Press {
                self.ui.type_filter(key.code);
                changed = true;
                continue;
            }
            let Some(action) = keymap::lookup(KEYS, &key) else {
                continue;
            };
            let inputs = model.timeline_inputs(Instant::now());
            let stats = model.span_stats();
            let ids: Vec<u32> = self.ui.span_list(&stats).iter().map(|s| s.id).collect();
            let scene = Scene {
                chunks: &inputs.chunks,
                now: inputs.now,
                ticks_per_second: inputs.ticks_per_second,
                spans: &ids,
            };
            quit |= self.ui.apply(action, &scene);
            changed = true;
        }
        (quit, changed)
    }

    /// Gives the terminal back.
    pub fn close(self) {
        ratatui::restore();
    }
}
