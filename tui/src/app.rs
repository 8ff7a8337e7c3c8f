//! The terminal screen both `attach` and `view FILE` drive: it draws the
//! model (the timeline as [`UiState`] says, and the summary panels) and
//! turns keys into actions on the view state. Drawing reads the model; the
//! only state keys change is the view's.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event};
use ratatui::DefaultTerminal;

use crate::action::Action;
use crate::keymap::{self, KEYS};
use crate::ui_state::{Mode, Scene, UiState};
use crate::view::{self, Panes};
use crate::widgets::span_stats::SpanDetail;
use crate::widgets::span_table::SpanTable;
use crate::widgets::timeline::{lanes_of, Timeline};
use typhon_live_core::Level;
use typhon_live_model::history;
use typhon_live_model::{LogSearch, Model, NameDetail, SpanStats};

use crate::widgets::code::CodePane;
use crate::widgets::log::LogPane;
use crate::widgets::sites::SitesPane;

/// A string field's values shown, most frequent first.
const FIELD_VALUES: usize = 3;
/// Log rows prepared for the log pane: more than a terminal shows.
const LOG_ROWS: usize = 200;

/// The full-screen terminal UI.
pub struct Screen {
    terminal: DefaultTerminal,
    /// Live or paused, and the window.
    pub ui: UiState,
    /// The selected name's detail, and what it was computed over.
    detail: Option<NameDetail>,
    /// The log's lines that match its query, kept up to date.
    log_search: LogSearch,
}

impl Screen {
    /// Takes over the terminal (raw mode, alternate screen).
    pub fn open() -> std::io::Result<Screen> {
        let terminal = ratatui::try_init()?;
        Ok(Screen {
            terminal,
            ui: UiState::default(),
            detail: None,
            log_search: LogSearch::default(),
        })
    }

    /// Draws `model` as of `now`.
    pub fn draw(&mut self, model: &mut Model, now: Instant) {
        let summary = model.summary(crate::uptime::at(now));
        let inputs = model.timeline_inputs(crate::uptime::at(now));
        let stats = self.span_stats(model, &summary.span_stats);
        let list = self.ui.span_list(&stats);
        let ids: Vec<u32> = list.iter().map(|s| s.id).collect();
        let scene = Scene::new(&inputs, &ids);
        let (start, end, chunks) = self.ui.window(&scene);
        // The selected name's distribution, over what the window draws
        // from: the live history, or what a pause pinned.
        let selected = self.ui.selected_row(list.len());
        if let Some(row) = selected {
            let name = list[row].id;
            let live = matches!(self.ui.mode, Mode::Live);
            let at = crate::uptime::at(now);
            if !(self.detail.as_ref()).is_some_and(|d| d.stands(name, chunks, live, at)) {
                let names = model.names();
                let stacks = model.state().stacks();
                self.detail = Some(NameDetail::of(
                    name,
                    chunks,
                    names,
                    stacks,
                    FIELD_VALUES,
                    at,
                ));
            }
        }
        let distribution = selected.and_then(|_| self.detail.as_ref().map(|d| &d.distribution));
        let field_summaries = self.detail.as_ref().map_or(&[][..], |d| &d.fields);
        let max_tick = distribution
            .as_ref()
            .and_then(|d| history::tick_at(chunks.iter().map(|c| &**c), d.max_at).map(|t| t.tick));
        let lanes = lanes_of(&inputs);
        let log_rows = if self.ui.log {
            self.log_search.set_query(self.ui.log_query.clone());
            self.log_search.update(model.logs(), model.names());
            let until = match self.ui.mode {
                Mode::Live => None,
                Mode::Paused { end, .. } => Some(end),
            };
            model.log_rows(&self.log_search, until, LOG_ROWS)
        } else {
            Vec::new()
        };
        let panes = Panes {
            timeline: Timeline {
                chunks,
                lanes: &lanes,
                names: model.names(),
                start,
                end,
                now: inputs.now,
                open_tasks: &inputs.open_tasks,
                triggers: &inputs.triggers,
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
                    fields: field_summaries,
                    cpu: self.detail.as_ref().and_then(|d| d.cpu.as_ref()),
                }),
            sites: self.ui.sites.then_some(SitesPane {
                memory: summary.memory.as_ref(),
            }),
            code: self.ui.code.then(|| CodePane {
                selected: selected
                    .zip(self.detail.as_ref())
                    .map(|(row, d)| (list[row].name.as_str(), &d.profile)),
                names: model.names(),
            }),
            log: self.ui.log.then(|| LogPane {
                rows: &log_rows,
                search: &self.ui.log_query.text,
                typing: self.ui.filtering,
                min_level: self.ui.log_query.min_level.map_or("all", Level::as_str),
                matched: self.log_search.matched().len(),
                kept: model.logs().lines().len(),
                lost: model.logs().lost,
                evicted: model.logs().evicted,
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
            quit |= self.apply(model, action);
            changed = true;
        }
        (quit, changed)
    }

    /// Does what `action` asks of the view of `model`, as its key would;
    /// whether it asks to quit.
    pub fn apply(&mut self, model: &Model, action: Action) -> bool {
        let inputs = model.timeline_inputs(crate::uptime::now());
        let live = model.span_stats();
        let stats = self.span_stats(model, &live);
        let ids: Vec<u32> = self.ui.span_list(&stats).iter().map(|s| s.id).collect();
        let scene = Scene::new(&inputs, &ids);
        self.ui.apply(action, &scene)
    }

    /// The span names' statistics the list shows: over the live history
    /// (`live`), or over what a pause pinned, which the selected name's
    /// detail is over too, so that the two agree.
    fn span_stats<'a>(&self, model: &Model, live: &'a [SpanStats]) -> Cow<'a, [SpanStats]> {
        match &self.ui.mode {
            Mode::Live => Cow::Borrowed(live),
            Mode::Paused { pinned, .. } => Cow::Owned(model.span_stats_over(pinned)),
        }
    }

    /// Gives the terminal back.
    pub fn close(self) {
        ratatui::restore();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::widgets::Widget;
    use typhon_live_core::block::{max_block_frame_len, write_block};
    use typhon_live_core::definitions::write_definitions;
    use typhon_live_core::init::write_init;
    use typhon_live_core::{
        BlockBuilder, Event, GaugeValue, LaneInfo, LaneKind, Lanes, Metadata, NameTable,
    };

    use crate::action::Action;
    use crate::testing::feed;
    use crate::ui_state::{Scene, UiState};
    use crate::widgets::timeline::{lanes_of, Timeline};
    use typhon_live_model::Model;

    /// A xorshift generator: the same "random" stream every run.
    struct Dice(u64);

    impl Dice {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        /// Mostly small numbers, sometimes anything.
        fn value(&mut self) -> u64 {
            match self.next() % 8 {
                0 => self.next(),
                1 => u64::MAX - self.next() % 16,
                _ => self.next() % 100_000,
            }
        }
    }

    /// Blocks of random events (times going backwards, huge durations,
    /// parent cycles, unknown names and lanes), lanes renamed by
    /// Definitions between them: the model takes them, the timeline and
    /// the statistics draw them at random windows and keys, nothing
    /// panics and the history stays within its budget.
    #[test]
    fn random_streams_are_drawn_without_a_panic() {
        for seed in [0x9e37_79b9_7f4a_7c15, 1, 0xdead_beef, u64::MAX / 3, 42] {
            draw_a_random_stream(seed);
        }
    }

    fn draw_a_random_stream(seed: u64) {
        let mut dice = Dice(seed);
        let names: NameTable<8, 256> = NameTable::new();
        let lanes = Lanes::<2, 16>::new();
        let meta = Metadata {
            ticks_per_second: 1_000_000,
            ..Metadata::default()
        };
        let mut stream = Vec::new();
        let mut out = vec![0u8; 1 << 16];
        let n = write_init(&mut out, 0, &meta, &names, lanes.iter()).unwrap();
        stream.extend_from_slice(&out[..n]);
        for seq in 1..200u32 {
            let mut scratch = vec![0u8; 8192];
            let mut block = BlockBuilder::new(&mut scratch);
            for _ in 0..40 {
                let lane = (dice.next() % 4) as u16;
                let event = match dice.next() % 5 {
                    0 => Event::Span {
                        start: dice.value(),
                        duration: dice.value(),
                        name: (dice.next() % 12) as u32,
                        id: (dice.next() % 50) as u32 + 1,
                        parent: (dice.next() % 50) as u32,
                        arg: Some(dice.value()),
                    },
                    1 => Event::Instant {
                        time: dice.value(),
                        name: (dice.next() % 12) as u32,
                        payload: dice.value(),
                    },
                    2 => Event::Gauge {
                        time: dice.value(),
                        gauge: (dice.next() % 12) as u32,
                        value: GaugeValue::Float(f64::from_bits(dice.next())),
                    },
                    3 => Event::TickStart {
                        time: dice.value(),
                        tick: dice.next() % 20,
                    },
                    _ => Event::TickEnd {
                        time: dice.value(),
                        tick: dice.next() % 20,
                        overrun: dice.next().is_multiple_of(2),
                    },
                };
                block.push(lane, &event);
            }
            let mut frame = vec![0u8; max_block_frame_len(8192, 1)];
            let n = write_block(&mut frame, seq * 2, &block, &[(1, 3)]).unwrap();
            stream.extend_from_slice(&frame[..n]);
            // The lanes renamed: slot 0 and 1 under new names and kinds.
            let mut renamed: NameTable<8, 256> = NameTable::new();
            let lane_name = renamed.intern(&format!("lane-{seq}")).unwrap();
            let infos = [
                LaneInfo {
                    id: 0,
                    name: lane_name,
                    kind: LaneKind::Worker,
                },
                LaneInfo {
                    id: 1,
                    name: lane_name,
                    kind: LaneKind::Main,
                },
            ];
            let n = write_definitions(&mut out, seq * 2 + 1, &renamed, 0, infos.iter().copied())
                .unwrap();
            stream.extend_from_slice(&out[..n]);
        }
        let mut model = Model::with_history(60.0, 256 << 10);
        feed(&mut model, &stream);
        assert!(model.history().bytes() <= 256 << 10);
        let summary = model.summary(crate::uptime::now());
        let mut ui = UiState::default();
        let keys = [
            Action::TogglePause,
            Action::StepBack,
            Action::WorstTick,
            Action::ZoomOut,
            Action::PageBack,
            Action::SelectDown,
            Action::JumpToMax,
            Action::ZoomIn,
            Action::Oldest,
            Action::StepForward,
            Action::PageForward,
            Action::Live,
        ];
        let ids: Vec<u32> = summary.span_stats.iter().map(|s| s.id).collect();
        for round in 0..60 {
            let inputs = model.timeline_inputs(crate::uptime::now());
            let scene = Scene::new(&inputs, &ids);
            ui.apply(keys[round % keys.len()], &scene);
            let (start, end, chunks): (u64, u64, &[Arc<_>]) = ui.window(&scene);
            let lanes = lanes_of(&inputs);
            let timeline = Timeline {
                chunks,
                lanes: &lanes,
                names: model.names(),
                start,
                end,
                now: inputs.now,
                open_tasks: &inputs.open_tasks,
                triggers: &inputs.triggers,
            };
            let area = Rect::new(0, 0, 100, 12);
            let mut buf = Buffer::empty(area);
            (&timeline).render(area, &mut buf);
            let _ = ui.status(&scene);
            for id in &ids {
                let _ = model.history().distribution(*id);
            }
        }
    }
}
