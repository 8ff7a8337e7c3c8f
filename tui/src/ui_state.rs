//! The view's own state: following the live edge or paused on a window,
//! and how much time the window spans. Keys change it through
//! [`UiState::apply`]; drawing only reads it.

use std::sync::Arc;

use typhon_live_core::{Level, OpenSpan};
use typhon_live_model::history::{self, Chunk, TickRecord};
use typhon_live_model::{LogQuery, SpanStats, TimelineInputs, Trigger};

use super::action::Action;

/// Ticks shown by default: the window spans the last this many.
const DEFAULT_TICKS: usize = 4;

/// What the view shows.
#[derive(Clone, Debug)]
pub enum Mode {
    /// The window ends at the live edge and moves with it.
    Live,
    /// The window ends at `end`, drawn from `pinned`: what the history
    /// held when the user last moved, kept while the stream goes on.
    Paused {
        /// Host time the window ends at.
        end: u64,
        /// The chunks drawn.
        pinned: Vec<Arc<Chunk>>,
    },
}

/// The records the view may show, and the host clock.
pub struct Scene<'a> {
    /// The history's chunks and the one being filled, oldest first.
    pub chunks: &'a [Arc<Chunk>],
    /// Host time now.
    pub now: u64,
    /// Host ticks per second.
    pub ticks_per_second: u64,
    /// The span name ids of the list, as shown (filtered).
    pub spans: &'a [u32],
    /// A capture's triggers.
    pub triggers: &'a [Trigger],
    /// The lanes with their open spans, in drawing order.
    pub lanes: &'a [(u16, String, Vec<OpenSpan>)],
}

impl<'a> Scene<'a> {
    /// The scene of `inputs`, with the span list's name ids `spans`.
    pub fn new(inputs: &'a TimelineInputs, spans: &'a [u32]) -> Scene<'a> {
        Scene {
            chunks: &inputs.chunks,
            now: inputs.now,
            ticks_per_second: inputs.ticks_per_second,
            spans,
            triggers: &inputs.triggers,
            lanes: &inputs.lanes,
        }
    }

    fn chunks(&self) -> impl Iterator<Item = &Chunk> {
        self.chunks.iter().map(|c| &**c)
    }

    fn ticks(&self) -> impl Iterator<Item = &TickRecord> {
        self.chunks().flat_map(|c| c.ticks.iter())
    }

    /// Host time of the oldest record.
    fn oldest(&self) -> u64 {
        self.chunks.first().map_or(self.now, |c| c.first)
    }
}

/// The view's state.
#[derive(Clone, Debug)]
pub struct UiState {
    /// Live or paused.
    pub mode: Mode,
    /// The window's length once the user zoomed; before, the last
    /// [`DEFAULT_TICKS`] ticks.
    zoom: Option<u64>,
    /// The selected row of the span name list.
    pub selected: usize,
    /// Shown are the span names containing this (case folded).
    pub filter: String,
    /// Keys type into the filter.
    pub filtering: bool,
    /// The log is shown in place of the span names; `/` then types its
    /// search.
    pub log: bool,
    /// What the log shows.
    pub log_query: LogQuery,
    /// The allocation sites are shown in place of the span names.
    pub sites: bool,
    /// Which code the selected name ran is shown in place of its
    /// statistics.
    pub code: bool,
    /// The trigger shown last, if any.
    pub trigger: Option<usize>,
    /// A capture was asked for (`c`), for whoever keeps the recorder to
    /// take.
    pub capture_asked: bool,
}

impl Default for UiState {
    fn default() -> Self {
        UiState {
            mode: Mode::Live,
            zoom: None,
            selected: 0,
            filter: String::new(),
            filtering: false,
            log: false,
            log_query: LogQuery::default(),
            sites: false,
            code: false,
            trigger: None,
            capture_asked: false,
        }
    }
}

impl UiState {
    /// The window's length in host ticks.
    pub fn window_len(&self, scene: &Scene<'_>) -> u64 {
        if let Some(zoom) = self.zoom {
            return zoom;
        }
        let mut starts: Vec<u64> = scene.ticks().map(|t| t.start).collect();
        starts.sort_unstable();
        let tenth = (scene.ticks_per_second / 10).max(1);
        match starts.len() {
            0 => tenth,
            n => scene
                .now
                .saturating_sub(starts[n.saturating_sub(DEFAULT_TICKS)])
                .max(1),
        }
    }

    /// The window `[start, end)` to draw, and the chunks to draw it from.
    pub fn window<'a>(&'a self, scene: &Scene<'a>) -> (u64, u64, &'a [Arc<Chunk>]) {
        let len = self.window_len(scene);
        match &self.mode {
            Mode::Live => (scene.now.saturating_sub(len), scene.now, scene.chunks),
            Mode::Paused { end, pinned } => (end.saturating_sub(len), *end, pinned),
        }
    }

    /// Host time the window ends at.
    fn end(&self, scene: &Scene<'_>) -> u64 {
        match &self.mode {
            Mode::Live => scene.now,
            Mode::Paused { end, .. } => *end,
        }
    }

    fn pause_at(&mut self, end: u64, scene: &Scene<'_>) {
        let end = end.clamp(scene.oldest(), scene.now);
        self.mode = Mode::Paused {
            end,
            pinned: scene.chunks.to_vec(),
        };
    }

    /// The span names the list shows: those matching the filter.
    pub fn span_list<'s>(&self, stats: &'s [SpanStats]) -> Vec<&'s SpanStats> {
        let filter = self.filter.to_lowercase();
        stats
            .iter()
            .filter(|s| filter.is_empty() || s.name.to_lowercase().contains(&filter))
            .collect()
    }

    /// The selected row of a list of `len` rows.
    pub fn selected_row(&self, len: usize) -> Option<usize> {
        (len > 0).then(|| self.selected.min(len - 1))
    }

    /// A key typed while filtering: a character adds to the filter (the
    /// log's search while the log is shown), Backspace takes one off,
    /// Enter or Esc ends the typing.
    pub fn type_filter(&mut self, key: ratatui::crossterm::event::KeyCode) {
        use ratatui::crossterm::event::KeyCode;
        let typed = if self.log {
            &mut self.log_query.text
        } else {
            &mut self.filter
        };
        match key {
            KeyCode::Char(c) => typed.push(c),
            KeyCode::Backspace => {
                typed.pop();
            }
            KeyCode::Enter | KeyCode::Esc => self.filtering = false,
            _ => {}
        }
        self.selected = 0;
    }

    /// Shows `tick` whole, paused, with room around it.
    fn show_tick(&mut self, tick: TickRecord, scene: &Scene<'_>) {
        let len = self.window_len(scene);
        // Wider than three quarters of the window: zoom out to fit it (in
        // u128: a hostile tick may span the whole clock).
        let (duration, len) = (u128::from(tick.duration()), u128::from(len));
        if duration * 4 > len * 3 {
            self.zoom = Some(u64::try_from(duration * 4 / 3 + 1).unwrap_or(u64::MAX));
        }
        let len = self.window_len(scene);
        self.pause_at(tick.end.saturating_add(len / 8), scene);
    }

    /// Shows trigger `index` of the scene: the tick it fired in, else the
    /// span it fired on, else its moment; that span's name selected.
    fn show_trigger(&mut self, index: usize, scene: &Scene<'_>) {
        let Some(trigger) = scene.triggers.get(index) else {
            return;
        };
        self.trigger = Some(index);
        let span = trigger.span_in(scene.chunks(), scene.lanes, scene.now);
        let whole = history::tick_at(scene.chunks(), trigger.time).or(span.map(|s| TickRecord {
            tick: 0,
            start: s.start,
            end: s.start.saturating_add(s.duration),
            overrun: false,
        }));
        match whole {
            Some(tick) => self.show_tick(tick, scene),
            None => {
                let len = self.window_len(scene);
                self.pause_at(trigger.time.saturating_add(len / 8), scene);
            }
        }
        if let Some(row) = span.and_then(|s| scene.spans.iter().position(|&id| id == s.name)) {
            self.selected = row;
        }
    }

    /// One line saying what the window shows.
    pub fn status(&self, scene: &Scene<'_>) -> String {
        let tps = scene.ticks_per_second.max(1) as f64;
        let len = self.window_len(scene) as f64 / tps;
        let across = if len >= 1.0 {
            format!("{len:.2} s")
        } else {
            format!("{:.2} ms", len * 1e3)
        };
        match &self.mode {
            Mode::Live => format!("LIVE, {across} across"),
            Mode::Paused { end, pinned } => {
                let bytes: usize = pinned.iter().map(|c| c.bytes()).sum();
                let trigger = match self.trigger.and_then(|i| Some((i, scene.triggers.get(i)?))) {
                    Some((i, t)) => format!(
                        "; trigger {} of {} (▼) at {:.3} s",
                        i + 1,
                        scene.triggers.len(),
                        t.time as f64 / tps
                    ),
                    None => String::new(),
                };
                format!(
                    "PAUSED at {:.3} s, {across} across; {:.1} MiB of history pinned, from {:.3} s{trigger}",
                    *end as f64 / tps,
                    bytes as f64 / (1 << 20) as f64,
                    pinned.first().map_or(0.0, |c| c.first as f64 / tps)
                )
            }
        }
    }

    /// Does what `action` asks; `true` if it asks to quit.
    pub fn apply(&mut self, action: Action, scene: &Scene<'_>) -> bool {
        let len = self.window_len(scene);
        let end = self.end(scene);
        match action {
            Action::Quit => return true,
            Action::TogglePause => match self.mode {
                Mode::Live => self.pause_at(scene.now, scene),
                Mode::Paused { .. } => self.mode = Mode::Live,
            },
            Action::Live => self.mode = Mode::Live,
            Action::StepBack => {
                let back = scene.ticks().filter(|t| t.end < end).map(|t| t.end).max();
                self.pause_at(back.unwrap_or(end), scene);
            }
            Action::StepForward => {
                let on = scene.ticks().filter(|t| t.end > end).map(|t| t.end).min();
                self.pause_at(on.unwrap_or(end), scene);
            }
            Action::PageBack => self.pause_at(end.saturating_sub(len), scene),
            Action::PageForward => self.pause_at(end.saturating_add(len), scene),
            Action::Oldest => self.pause_at(scene.oldest().saturating_add(len), scene),
            Action::WorstTick => {
                if let Some(worst) = history::worst_tick(scene.chunks()) {
                    self.show_tick(worst, scene);
                }
            }
            Action::SelectUp => self.selected = self.selected.saturating_sub(1),
            Action::SelectDown => {
                self.selected = (self.selected + 1).min(scene.spans.len().saturating_sub(1));
            }
            Action::Filter => self.filtering = true,
            Action::JumpToMax => {
                let Some(&name) = self
                    .selected_row(scene.spans.len())
                    .and_then(|row| scene.spans.get(row))
                else {
                    return false;
                };
                let d = history::distribution(scene.chunks(), name);
                if d.count == 0 {
                    return false;
                }
                // The span's own extent when no tick holds it.
                let tick = history::tick_at(scene.chunks(), d.max_at).unwrap_or(TickRecord {
                    tick: 0,
                    start: d.max_at,
                    end: d.max_at.saturating_add(d.max),
                    overrun: false,
                });
                self.show_tick(tick, scene);
            }
            // One pane in place of the names at a time.
            Action::ToggleLog => {
                self.log = !self.log;
                self.sites = false;
            }
            Action::ToggleSites => {
                self.sites = !self.sites;
                self.log = false;
            }
            Action::ToggleCode => self.code = !self.code,
            Action::LogLevel => {
                self.log_query.min_level = match self.log_query.min_level {
                    None => Some(Level::Info),
                    Some(Level::Info) => Some(Level::Warn),
                    Some(Level::Warn) => Some(Level::Error),
                    Some(_) => None,
                }
            }
            Action::NextTrigger if !scene.triggers.is_empty() => {
                let next = self.trigger.map_or(0, |i| (i + 1) % scene.triggers.len());
                self.show_trigger(next, scene);
            }
            Action::NextTrigger => return false,
            Action::Capture => self.capture_asked = true,
            Action::ZoomIn => self.zoom = Some((len / 2).max(10)),
            Action::ZoomOut => {
                let most = scene.now.saturating_sub(scene.oldest()).max(len);
                self.zoom = Some(len.saturating_mul(2).min(most));
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use typhon_live_model::history::SpanRecord;

    /// Ticks of 1 000 host ticks, tick 5 overrunning to 4 000.
    fn chunks() -> Vec<Arc<Chunk>> {
        let mut chunk = Chunk::default();
        let mut at = 0;
        for tick in 0..10 {
            let len = if tick == 5 { 4_000 } else { 1_000 };
            chunk.push_tick(TickRecord {
                tick,
                start: at,
                end: at + len,
                overrun: tick == 5,
            });
            at += len;
        }
        vec![Arc::new(chunk)]
    }

    /// [`chunks`] at 13 000, with no span list.
    fn scene(chunks: &[Arc<Chunk>]) -> Scene<'_> {
        Scene {
            chunks,
            now: 13_000,
            ticks_per_second: 1_000_000,
            spans: &[],
            triggers: &[],
            lanes: &[],
        }
    }

    #[test]
    fn pause_step_page_worst_and_back_to_live() {
        let chunks = chunks();
        let scene = scene(&chunks);
        let mut ui = UiState::default();
        // Live: the last four ticks (9 started at 12 000... 6 at 9 000).
        assert_eq!(ui.window(&scene).0..ui.window(&scene).1, 9_000..13_000);
        assert!(!ui.apply(Action::TogglePause, &scene));
        assert!(matches!(ui.mode, Mode::Paused { end: 13_000, .. }));
        // One tick back: the end of tick 8.
        ui.apply(Action::StepBack, &scene);
        assert_eq!(ui.window(&scene).1, 12_000);
        ui.apply(Action::StepForward, &scene);
        assert_eq!(ui.window(&scene).1, 13_000);
        ui.apply(Action::PageBack, &scene);
        assert_eq!(ui.window(&scene).1, 9_000);
        // The worst tick, 5 to 9 000: zoomed out to fit it, with room.
        ui.apply(Action::WorstTick, &scene);
        let (start, end, _) = ui.window(&scene);
        assert!(start <= 5_000 && end >= 9_000, "{start}..{end}");
        ui.apply(Action::ZoomIn, &scene);
        assert_eq!(ui.window_len(&scene), (end - start) / 2);
        // The oldest record: the end of tick 0.
        ui.apply(Action::Oldest, &scene);
        assert_eq!(ui.window(&scene).0, 1_000);
        ui.apply(Action::Live, &scene);
        assert!(matches!(ui.mode, Mode::Live));
        assert!(ui.apply(Action::Quit, &scene));
    }

    #[test]
    fn the_log_takes_the_search_while_shown_and_its_level_cycles() {
        use ratatui::crossterm::event::KeyCode;
        let chunks = chunks();
        let scene = scene(&chunks);
        let mut ui = UiState::default();
        ui.apply(Action::ToggleLog, &scene);
        ui.apply(Action::Filter, &scene);
        for key in [KeyCode::Char('d'), KeyCode::Char('x'), KeyCode::Backspace] {
            ui.type_filter(key);
        }
        ui.type_filter(KeyCode::Enter);
        assert_eq!((ui.log_query.text.as_str(), ui.filter.as_str()), ("d", ""));
        assert!(!ui.filtering);
        let levels: Vec<_> = (0..4)
            .map(|_| {
                ui.apply(Action::LogLevel, &scene);
                ui.log_query.min_level
            })
            .collect();
        assert_eq!(
            levels,
            [
                Some(Level::Info),
                Some(Level::Warn),
                Some(Level::Error),
                None
            ]
        );
        ui.apply(Action::ToggleLog, &scene);
        ui.apply(Action::Filter, &scene);
        ui.type_filter(KeyCode::Char('p'));
        assert_eq!((ui.log_query.text.as_str(), ui.filter.as_str()), ("d", "p"));
    }

    #[test]
    fn m_jumps_to_the_tick_of_the_selected_names_longest_span() {
        let mut chunks = chunks();
        let mut extra = Chunk::default();
        // Name 3's spans: short ones, and its longest inside tick 5.
        for (start, duration) in [(500, 10), (5_200, 3_000), (10_100, 20)] {
            extra.push_span(
                history::SpanRecord {
                    start,
                    duration,
                    arg: 0,
                    id: start as u32,
                    parent: 0,
                    name: 3,
                    lane: 0,
                    has_arg: false,
                    poll: false,
                },
                duration,
            );
        }
        chunks.push(Arc::new(extra));
        let scene = Scene {
            chunks: &chunks,
            now: 13_000,
            ticks_per_second: 1_000_000,
            spans: &[7, 3],
            triggers: &[],
            lanes: &[],
        };
        let mut ui = UiState::default();
        ui.apply(Action::SelectDown, &scene);
        ui.apply(Action::SelectDown, &scene);
        assert_eq!(ui.selected_row(scene.spans.len()), Some(1));
        ui.apply(Action::JumpToMax, &scene);
        let (start, end, _) = ui.window(&scene);
        assert!(
            start <= 5_000 && end >= 9_000,
            "tick 5 whole: {start}..{end}"
        );
        assert!(matches!(ui.mode, Mode::Paused { .. }));
    }

    #[test]
    fn the_filter_is_typed_and_narrows_the_list() {
        use ratatui::crossterm::event::KeyCode;
        let stats: Vec<SpanStats> = ["Physics", "AI", "Query<Brain>"]
            .iter()
            .enumerate()
            .map(|(id, name)| SpanStats {
                id: id as u32,
                name: (*name).to_owned(),
                count: 1,
                total_ms: 1.0,
                self_ms: 1.0,
                busy_ms: 1.0,
                idle_ms: 0.0,
                mean_ms: 1.0,
                max_ms: 1.0,
                allocated_bytes: 0,
                p50_ms: None,
                p90_ms: None,
                p99_ms: None,
                cpu: None,
            })
            .collect();
        let mut ui = UiState {
            filtering: true,
            ..UiState::default()
        };
        for key in [
            KeyCode::Char('A'),
            KeyCode::Char('x'),
            KeyCode::Backspace,
            KeyCode::Char('i'),
        ] {
            ui.type_filter(key);
        }
        let shown: Vec<&str> = ui
            .span_list(&stats)
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(shown, ["AI", "Query<Brain>"]);
        ui.type_filter(KeyCode::Enter);
        assert!(!ui.filtering);
    }

    #[test]
    fn a_paused_window_keeps_its_chunks_while_the_history_moves_on() {
        let chunks = chunks();
        let mut ui = UiState::default();
        let scene = Scene {
            chunks: &chunks,
            now: 13_000,
            ticks_per_second: 1_000_000,
            spans: &[],
            triggers: &[],
            lanes: &[],
        };
        ui.apply(Action::TogglePause, &scene);
        // The stream goes on: the history is now something else entirely.
        let later: Vec<Arc<Chunk>> = vec![Arc::new(Chunk::default())];
        let scene = Scene {
            chunks: &later,
            now: 99_000,
            ticks_per_second: 1_000_000,
            spans: &[],
            triggers: &[],
            lanes: &[],
        };
        let (_, end, drawn) = ui.window(&scene);
        assert_eq!(end, 13_000);
        assert!(Arc::ptr_eq(&drawn[0], &chunks[0]));
    }

    #[test]
    fn a_trigger_shows_its_tick_and_selects_the_span_that_ran_when_it_fired() {
        let mut chunks = chunks();
        let mut extra = Chunk::default();
        // Tick 5 runs 5 000..9 000; span name 3 ran 5 500..8 500 inside
        // span name 7 (5 000..9 000).
        for (name, start, duration, id) in [(7, 5_000, 4_000, 1), (3, 5_500, 3_000, 2)] {
            extra.push_span(
                SpanRecord {
                    start,
                    duration,
                    arg: 0,
                    id,
                    parent: 0,
                    name,
                    lane: 0,
                    has_arg: false,
                    poll: false,
                },
                duration,
            );
        }
        chunks.push(Arc::new(extra));
        let triggers = [
            Trigger {
                time: 6_000,
                lane: 0,
                label: 9,
                span: None,
            },
            Trigger {
                time: 12_500,
                lane: 0,
                label: 9,
                span: Some((7, 5_000)),
            },
        ];
        let scene = Scene {
            chunks: &chunks,
            now: 13_000,
            ticks_per_second: 1_000_000,
            spans: &[7, 3],
            triggers: &triggers,
            lanes: &[],
        };
        let mut ui = UiState::default();
        ui.apply(Action::NextTrigger, &scene);
        // Tick 5 shown whole (zoomed out to fit it), the innermost span
        // running at 6 000 selected.
        let (start, end, _) = ui.window(&scene);
        assert!(start <= 5_000 && end >= 9_000, "{start}..{end}");
        assert_eq!(ui.selected_row(2), Some(1));
        assert!(ui.status(&scene).ends_with("trigger 1 of 2 (▼) at 0.006 s"));
        // The next names its span: the span's tick (9, at 12 500) has no
        // span of its own there, so its span named 7 is selected.
        ui.apply(Action::NextTrigger, &scene);
        assert_eq!(ui.selected_row(2), Some(0));
        assert!(ui.status(&scene).contains("trigger 2 of 2"));
        // And round again.
        ui.apply(Action::NextTrigger, &scene);
        assert!(ui.status(&scene).contains("trigger 1 of 2"));
    }
}

#[cfg(test)]
mod with_a_model {

    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::widgets::Widget;

    use super::*;
    use crate::testing::{buffer_text, feed, nested_stream};
    use crate::widgets::timeline::{lanes_of, Timeline};
    use typhon_live_model::Model;

    /// The timeline of `model` as `ui` shows it, as text.
    fn picture(model: &Model, ui: &UiState) -> (String, u64) {
        let inputs = model.timeline_inputs(crate::uptime::now());
        let scene = Scene::new(&inputs, &[]);
        let (start, end, chunks) = ui.window(&scene);
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
        let area = Rect::new(0, 0, 94, 4);
        let mut buf = Buffer::empty(area);
        (&timeline).render(area, &mut buf);
        (buffer_text(&buf), end)
    }

    fn scene_of(model: &Model, f: impl FnOnce(&Scene<'_>)) {
        let inputs = model.timeline_inputs(crate::uptime::now());
        f(&Scene::new(&inputs, &[]));
    }

    #[test]
    fn a_paused_picture_stays_while_frames_arrive_and_steps_back_a_tick() {
        let mut model = Model::default();
        feed(&mut model, &nested_stream(0..50));
        let mut ui = UiState::default();
        let (live, _) = picture(&model, &ui);
        // The last four ticks, each an outer span over two inner ones.
        assert!(live.contains("┃49"), "{live}");
        assert!(live.contains("outer") && live.contains("inne"), "{live}");
        scene_of(&model, |scene| {
            ui.apply(Action::TogglePause, scene);
        });
        let (paused, end) = picture(&model, &ui);
        assert_eq!(paused, live);
        // Fifty more ticks arrive: the paused picture does not move.
        feed(&mut model, &nested_stream(50..100));
        assert_eq!(picture(&model, &ui), (paused.clone(), end));
        assert_ne!(picture(&model, &UiState::default()).0, paused);
        // One tick back: the window ends where tick 48 ended.
        scene_of(&model, |scene| {
            ui.apply(Action::StepBack, scene);
        });
        let (back, back_end) = picture(&model, &ui);
        // In ns: the fixture's 1 MHz ticks times 1 000.
        assert_eq!(back_end, (1_000 + 48 * 1_000 + 950) * 1_000);
        assert!(back.contains("┃48") && !back.contains("┃49"), "{back}");
    }
}
