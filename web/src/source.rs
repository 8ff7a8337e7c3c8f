//! The worker's half of the page: the stream's bytes into the model
//! ([`Feed`]), the flight recorder, and the view (the window, pause, the
//! selection, the searches). It answers the page's [`Ask`] with a
//! [`Scene`]: the window laid out at the page's width, and what the
//! panels show. The main thread never holds the history, so a slow
//! rasterizer there costs frames drawn, never frames read.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::Serialize;
use typhon_live_core::Level;
use typhon_live_model::history::{self, SpanRecord};
use typhon_live_model::profile::spans_holding;
use typhon_live_model::{
    Connection, Frame, LogQuery, LogRow, LogSearch, Model, NameDetail, Profile, Selection,
    SpanStats, Summary, TimelineInputs,
};
use typhon_live_recorder::{Recorder, Settings};

use crate::feed::Feed;
use crate::flame::{self, FlameLayout, FlameOf};
use crate::scene::{Action, Ask, Header, Hovered, Listed, LogFigures, Scene, Selected};
use crate::timeline::{self, Layout};
use crate::view::View;

/// The page's history budget by default (`?history=MiB` sets another):
/// sixteen tabs stay within 4 GiB.
pub const DEFAULT_HISTORY_BYTES: usize = 256 << 20;
/// The figures in the header are taken this often.
const SUMMARY_EVERY: Duration = Duration::from_millis(250);
/// A string field's values listed, most frequent first.
const FIELD_VALUES: usize = 8;
/// Log rows the panel holds: the latest matching lines up to the view.
const LOG_ROWS: usize = 1000;
/// Names listed at most: the most time first, of those the search finds.
const FOUND: usize = 30;
/// A live flame graph is folded again this often: folding reads every
/// sample of its selection.
const FLAME_EVERY: Duration = Duration::from_millis(500);
/// Spans outlined at most for a marked frame.
const MARKED_SPANS: usize = 256;

/// What the page's recorder keeps: 30 s of the past within 32 MiB, and a
/// capture at most 64 MiB (the recorder's other defaults).
pub fn recorder_settings() -> Settings {
    Settings {
        keep_bytes: 32 << 20,
        max_capture_bytes: 64 << 20,
        ..Settings::default()
    }
}

/// The stream, read, and the view of it.
pub struct Source {
    /// What the page knows of the stream.
    pub model: Model,
    feed: Feed,
    /// What is shown.
    pub view: View,
    selection: Option<NameDetail>,
    summary: Option<(Duration, Summary)>,
    /// Paused: the names' statistics over the history the pause pinned
    /// (as the selected name's are), and which pin (its chunks and time).
    paused_stats: Option<((usize, u64), Vec<SpanStats>)>,
    /// When (the page's clock) the first bytes came and a file's last:
    /// for the benchmarks.
    first_bytes_at: Option<Duration>,
    file_ended_at: Option<Duration>,
    /// Time spent taking bytes in (decoder, reader, model).
    ingest: Duration,
    /// The log's lines matching its query, kept up to date, and what the
    /// rows last sent were made for.
    log_search: LogSearch,
    log_made_for: Option<(u64, LogQuery, Option<u64>)>,
    /// The flight recorder the page keeps: `c` asks it for a capture.
    recorder: Recorder,
    /// Captures made since the page opened.
    captures: u64,
    /// The flame graph.
    flames: Flames,
}

/// What the flame graph folds, the frame marked, the last span clicked;
/// the graph as last laid out, for what, and when.
#[derive(Default)]
struct Flames {
    of: FlameOf,
    marked: Option<Frame>,
    clicked: Option<SpanRecord>,
    laid_out: Option<(FlameKey, Duration, FlameLayout)>,
}

impl Flames {
    /// The graph of what [`Flames::of`] says, over what the view draws
    /// (`inputs`, its window, the pause's pin), `width` pixels across:
    /// laid out again when what it is for changes, and live at most every
    /// [`FLAME_EVERY`]; `None` where no stack was sampled. A name's is
    /// the selected name's `detail`'s, folded on its schedule.
    fn scene(
        &mut self,
        model: &Model,
        selected: Option<u32>,
        detail: Option<&NameDetail>,
        (inputs, window, pin): (&TimelineInputs, (u64, u64), Option<(usize, u64)>),
        width: f32,
        now: Duration,
    ) -> Option<FlameLayout> {
        let (selection, title) = match (self.of, selected) {
            (FlameOf::Name, Some(name)) => (
                Selection::Name(name),
                format!("spans of {}", model.name(name)),
            ),
            (FlameOf::Span(span), _) => (
                Selection::Span {
                    lane: span.lane,
                    start: span.start,
                    end: span.start.saturating_add(span.duration),
                },
                format!("one span of {}", model.name(span.name)),
            ),
            (FlameOf::Lane(lane), _) => (
                Selection::Lane {
                    lane,
                    from: window.0,
                    to: window.1,
                },
                format!(
                    "lane {} over the window",
                    model.lane_name(lane).unwrap_or_else(|| format!("#{lane}"))
                ),
            ),
            (FlameOf::Window | FlameOf::Name, _) => (
                Selection::Range {
                    from: window.0,
                    to: window.1,
                },
                "every lane over the window".to_owned(),
            ),
        };
        let key = FlameKey {
            selection,
            // A name's graph holds its spans of the whole history.
            window: if matches!(selection, Selection::Name(_)) {
                (0, 0)
            } else {
                window
            },
            marked: self.marked,
            width: width as u32,
            pin,
        };
        let fresh = (self.laid_out.as_ref()).is_some_and(|(k, at, _)| {
            *k == key && (pin.is_some() || now.saturating_sub(*at) < FLAME_EVERY)
        });
        if !fresh {
            let chunks = || inputs.chunks.iter().map(|c| &**c);
            let stacks = model.state().stacks();
            let profile = match (detail, selection) {
                // Folded with the name's detail, on its schedule.
                (Some(detail), Selection::Name(name)) if detail.name == name => {
                    detail.profile.clone()
                }
                _ => Profile::of(chunks(), stacks, selection),
            };
            let mut layout = flame::lay_out(&profile, model.names(), title, width);
            let unix = model.state().unix();
            layout.newest_unix_ns = (profile.newest).and_then(|ns| Some(unix?.place(ns)));
            if let Some(frame) = self.marked {
                layout.marked = Some(frame);
                layout.marked_spans = spans_holding(chunks(), stacks, frame, window, MARKED_SPANS);
            }
            self.laid_out = Some((key, now, layout));
        }
        let (_, _, layout) = self.laid_out.as_ref()?;
        (layout.samples > 0).then(|| layout.clone())
    }
}

/// What a flame graph was laid out for: its selection, the window, the
/// frame marked and the width; a paused view's pin.
#[derive(Clone, Debug, PartialEq)]
struct FlameKey {
    selection: Selection,
    window: (u64, u64),
    marked: Option<Frame>,
    width: u32,
    pin: Option<(usize, u64)>,
}

/// The stream's side of the test hook.
#[derive(Serialize)]
struct Hook {
    summary: Summary,
    bytes: u64,
    frames: u64,
    /// The page's clock (ms since it was opened) when the first bytes
    /// came and a file's last.
    first_bytes_ms: Option<f64>,
    file_ended_ms: Option<f64>,
    /// Milliseconds spent in the decoder, reader and model.
    ingest_ms: f64,
    /// Captures made whole (the `c` key), downloaded.
    captures: u64,
}

impl Source {
    /// A source keeping `history_bytes` of history.
    pub fn new(history_bytes: usize) -> Source {
        let mut model = Model::with_history(history::DEFAULT_HISTORY_SECONDS, history_bytes);
        model.connection = Connection::Connecting { attempt: 1 };
        Source {
            model,
            feed: Feed::new(),
            view: View::default(),
            selection: None,
            summary: None,
            paused_stats: None,
            first_bytes_at: None,
            file_ended_at: None,
            ingest: Duration::ZERO,
            log_search: LogSearch::default(),
            log_made_for: None,
            recorder: Recorder::new(recorder_settings(), Vec::new()),
            captures: 0,
            flames: Flames::default(),
        }
    }

    /// Takes in bytes of the stream that arrived at `now` (and at Unix
    /// time `received`, ns, where known); returns what to tell the server
    /// when it is due ([`Feed::say_read`]).
    pub fn take(&mut self, bytes: &[u8], now: Duration, received: Option<u64>) -> Option<String> {
        self.first_bytes_at.get_or_insert(now);
        let (model, recorder) = (&mut self.model, &mut self.recorder);
        self.feed.push(bytes, model, recorder, now, received);
        self.feed.say_read()
    }

    /// Taking bytes in took `took` (measured around [`Source::take`]:
    /// the model reads no clock).
    pub fn ingest_took(&mut self, took: Duration) {
        self.ingest += took;
    }

    /// The stream's connection opened (again, if one was lost).
    pub fn connected(&mut self, peer: String) {
        self.feed.connected(&mut self.model);
        self.model.connection = Connection::Connected { peer };
    }

    /// The stream was a recorded file, and it all arrived: it is shown
    /// paused at its end, and not connected again.
    pub fn file_ended(&mut self, now: Duration) {
        self.file_ended_at = Some(now);
        self.model.flush_history();
        self.model.connection = Connection::File {
            path: "a recorded trace".into(),
        };
        self.view.resume();
        let inputs = self.model.timeline_inputs(now);
        // A capture opens on its first trigger: the tick it fired in, or
        // the span it fired on, that span's name selected.
        let opening = inputs.triggers.first().map(|trigger| {
            let chunks = inputs.chunks.iter().map(|c| &**c);
            let span = trigger.span_in(chunks.clone(), &inputs.lanes, inputs.now);
            let shown = history::tick_at(chunks, trigger.time)
                .map(|t| (t.start, t.duration()))
                .or(span.map(|s| (s.start, s.duration.max(1))));
            (trigger.time, shown, span.map(|s| s.name))
        });
        self.view.pause(inputs);
        if let Some((time, shown, name)) = opening {
            match shown {
                Some((start, length)) => self.view.show(start, length),
                None => self.view.centre_on(time),
            }
            if name.is_some() {
                self.view.selected = name;
            }
        }
    }

    /// The stream's connection closed.
    pub fn disconnected(&mut self, reason: String, retry_in: Duration) {
        if !matches!(self.model.connection, Connection::Ended { .. }) {
            self.model.connection = Connection::Waiting {
                reason,
                retry_in_ms: retry_in.as_millis() as u64,
            };
        }
    }

    /// Applies what the page asked for at `now`, and answers with what
    /// to draw.
    pub fn answer(&mut self, ask: Ask, now: Duration) -> Scene {
        for action in ask.actions {
            self.apply(action, now);
        }
        let due =
            (self.summary.as_ref()).is_none_or(|(at, _)| now.saturating_sub(*at) >= SUMMARY_EVERY);
        if due {
            self.summary = Some((now, self.model.summary(now)));
        }
        let live = self.model.timeline_inputs(now);
        self.reselect(&live, now);
        let inputs = self.view.pinned().unwrap_or(&live);
        let layout = timeline::lay_out(inputs, self.view.window(inputs.now), ask.width);
        let hovered = ask.hover.map(|hover| Hovered {
            hover,
            tick: history::tick_at(inputs.chunks.iter().map(|c| &**c), hover.start).map(|t| t.tick),
            self_ns: hover.span.map(|span| self_time(inputs, &span)),
        });
        let stream_now = inputs.now;
        let window = layout.window.map_or((0, 0), |w| (w.start, w.end));
        let pin = self.view.pinned().map(|p| (p.chunks.len(), p.now));
        let flame = self.flames.scene(
            &self.model,
            self.view.selected,
            self.selection.as_ref(),
            (inputs, window, pin),
            ask.width,
            now,
        );
        let (log, log_rows) = self.log();
        let listed = self.listed();
        let download = self.download();
        let hook = ask.hook.then(|| self.hook(now));
        let summary = self.summary.as_ref().map(|(_, s)| s);
        Scene {
            names: self.names(&layout),
            layout,
            paused: self.view.is_paused(),
            window_length: self.view.length(),
            selected: self.view.selected,
            now: stream_now,
            header: summary.map(header).unwrap_or_default(),
            listed,
            selection: self.selection.as_ref().map(|s| self.selected(s)),
            log,
            log_rows,
            memory: summary.and_then(|s| s.memory.clone()),
            flame,
            flame_of: self.flames.of,
            hovered,
            hook,
            download,
        }
    }

    fn apply(&mut self, action: Action, now: Duration) {
        let stream_now = match self.view.pinned() {
            Some(pinned) => pinned.now,
            None => self.model.timeline_inputs(now).now,
        };
        match action {
            Action::TogglePause if self.view.is_paused() => self.view.resume(),
            Action::TogglePause => self.view.pause(self.model.timeline_inputs(now)),
            Action::Zoom { factor, at } => self.view.zoom(factor, at, stream_now),
            Action::Pan(fraction) => {
                self.view.pause(self.model.timeline_inputs(now));
                self.view.pan(fraction);
            }
            Action::Select(name) => self.view.selected = Some(name),
            Action::Jump(span) => {
                self.view.pause(self.model.timeline_inputs(now));
                self.view.show(span.start, span.duration);
            }
            Action::ShowTime(time) => {
                self.view.pause(self.model.timeline_inputs(now));
                self.view.centre_on(time);
            }
            Action::Capture => {
                let what = "the c key of the browser viewer";
                self.recorder.demand_with(what, self.model.state());
                self.model.notice = Some(format!(
                    "capturing the past and the next {:.0} s, downloaded when whole",
                    recorder_settings().after_ns as f64 / 1e9
                ));
            }
            Action::Search(text) => self.view.search = text,
            Action::Clicked(span) => self.flames.clicked = Some(span),
            Action::Flame(of) => self.flames.of = of,
            Action::Mark(frame) => self.flames.marked = frame,
            Action::Log { text, min_level } => {
                self.view.log_query = LogQuery {
                    text,
                    min_level: min_level.and_then(|byte| Level::from_byte(byte).ok()),
                }
            }
        }
    }

    /// The selected name's detail, over what the view draws: live, the
    /// history moves every frame, and it follows at most every
    /// [`NameDetail::REFRESH`].
    fn reselect(&mut self, live: &TimelineInputs, now: Duration) {
        let Some(name) = self.view.selected else {
            self.selection = None;
            return;
        };
        let pinned = self.view.pinned();
        let chunks = &pinned.unwrap_or(live).chunks;
        let stands = (self.selection.as_ref())
            .is_some_and(|s| s.stands(name, chunks, pinned.is_none(), now));
        if !stands {
            let (names, stacks) = (self.model.names(), self.model.state().stacks());
            self.selection = Some(NameDetail::of(
                name,
                chunks,
                names,
                stacks,
                FIELD_VALUES,
                now,
            ));
        }
    }

    fn selected(&self, s: &NameDetail) -> Selected {
        let name = self.model.name(s.name);
        Selected {
            id: s.name,
            cpu: s.cpu.map(|cpu| cpu.lines(&name)),
            name,
            distribution: s.distribution.clone(),
            longest: (s.longest.iter().copied())
                .zip(s.longest_allocated.iter().copied())
                .collect(),
            fields: s.fields.clone(),
        }
    }

    /// The names listed: the first [`FOUND`] with the most time that hold
    /// the search's text (a stream may name thousands); paused, over the
    /// pinned history (as the selected name's statistics are), not the
    /// live one.
    fn listed(&mut self) -> Vec<Listed> {
        match self.view.pinned() {
            Some(pinned) => {
                let pin = (pinned.chunks.len(), pinned.now);
                if self.paused_stats.as_ref().is_none_or(|(p, _)| *p != pin) {
                    let stats = self.model.span_stats_over(&pinned.chunks);
                    self.paused_stats = Some((pin, stats));
                }
            }
            None => self.paused_stats = None,
        }
        let stats = match &self.paused_stats {
            Some((_, stats)) => stats.as_slice(),
            None => (self.summary.as_ref())
                .map(|(_, s)| s.span_stats.as_slice())
                .unwrap_or_default(),
        };
        let needle = self.view.search.to_lowercase();
        (stats.iter())
            .filter(|s| s.name.to_lowercase().contains(&needle))
            .take(FOUND)
            .map(|s| Listed {
                id: s.id,
                name: s.name.clone(),
                count: s.count,
                total_ms: s.total_ms,
                allocated_bytes: s.allocated_bytes,
            })
            .collect()
    }

    /// The log's figures once the stream has sent a line, and its rows
    /// up to where the view is when they changed.
    fn log(&mut self) -> (Option<LogFigures>, Option<Vec<LogRow>>) {
        let logs = self.model.logs();
        if logs.received() == 0 && logs.lost == 0 {
            return (None, None);
        }
        self.log_search.set_query(self.view.log_query.clone());
        self.log_search.update(logs, self.model.names());
        let made_for = (
            logs.received(),
            self.view.log_query.clone(),
            self.view.paused_at(),
        );
        let rows = (self.log_made_for.as_ref() != Some(&made_for))
            .then(|| self.model.log_rows(&self.log_search, made_for.2, LOG_ROWS));
        self.log_made_for = Some(made_for);
        let figures = LogFigures {
            matched: self.log_search.matched().len(),
            kept: logs.lines().len(),
            lost: logs.lost,
            evicted: logs.evicted,
        };
        (Some(figures), rows)
    }

    /// The text of each name that `layout` or the selection draws.
    fn names(&self, layout: &Layout) -> Vec<(u32, String)> {
        let mut ids = BTreeSet::new();
        for lane in &layout.lanes {
            for bar in &lane.bars {
                match bar.kind {
                    timeline::BarKind::Span(span) => ids.insert(span.name),
                    timeline::BarKind::Open(span) => ids.insert(span.name),
                    timeline::BarKind::Folded(_) => false,
                };
            }
            ids.extend(lane.instants.iter().map(|(_, i)| i.name));
        }
        ids.extend(layout.gauges.iter().map(|g| g.name));
        ids.extend(layout.triggers.iter().map(|(_, t)| t.label));
        ids.extend(layout.tasks.bars.iter().map(|b| b.name));
        ids.extend(self.view.selected);
        (ids.into_iter())
            .map(|id| (id, self.model.name(id)))
            .collect()
    }

    /// A capture made whole since last asked, as a trace file's bytes.
    fn download(&mut self) -> Option<Vec<u8>> {
        self.recorder.now_with(0, self.model.state());
        let mut made = None;
        while let Some(capture) = self.recorder.take() {
            self.captures += 1;
            self.model.notice = Some(format!(
                "captured {:.1} s of the stream ({} bytes): downloaded",
                (capture.end - capture.begin) as f64 / 1e9,
                capture.bytes.len()
            ));
            // One capture at a time ends: at most one a call is whole.
            made = Some(capture.bytes);
        }
        made
    }

    /// The stream's side of the test hook, as JSON.
    fn hook(&mut self, now: Duration) -> String {
        let mut summary = self.model.summary(now);
        self.model.fill_exact(&mut summary.span_stats);
        let hook = Hook {
            summary,
            bytes: self.feed.bytes(),
            frames: self.feed.frames(),
            first_bytes_ms: self.first_bytes_at.map(ms),
            file_ended_ms: self.file_ended_at.map(ms),
            ingest_ms: ms(self.ingest),
            captures: self.captures,
        };
        serde_json::to_string(&hook).unwrap_or_default()
    }
}

/// The header's line of `s`.
fn header(s: &Summary) -> Header {
    Header {
        process: s.process.clone(),
        connection: connection_text(&s.connection),
        events_per_second: s.events_per_second,
        lost: format!(
            "lost: {} frames, {} events · damaged {} · restarts {} · reconnects {}",
            s.frames_dropped, s.events_dropped, s.frames_damaged, s.restarts, s.reconnects
        ),
        alarm: s.lost_any(),
        history: format!(
            "history {:.1} s, {} / {} MiB",
            s.history.seconds,
            s.history.bytes >> 20,
            s.history.budget_bytes >> 20
        ),
        notice: s.notice.clone(),
    }
}

fn connection_text(c: &Connection) -> String {
    match c {
        Connection::Connecting { .. } => "connecting…".into(),
        Connection::Connected { .. } => "live".into(),
        Connection::Reconnecting { reason, .. } | Connection::Waiting { reason, .. } => {
            format!("reconnecting ({reason})")
        }
        Connection::Ended { reason } => format!("ended: {reason}"),
        Connection::File { path } => path.clone(),
    }
}

/// Milliseconds of `at`.
pub fn ms(at: Duration) -> f64 {
    at.as_secs_f64() * 1e3
}

/// A span's time outside its children: its children are the spans of
/// its lane whose parent it is, within it.
fn self_time(inputs: &TimelineInputs, span: &history::SpanRecord) -> u64 {
    let end = span.start.saturating_add(span.duration);
    let children: u64 = inputs
        .chunks
        .iter()
        .filter(|c| c.last >= span.start && c.earliest_start <= end)
        .flat_map(|c| c.spans.iter())
        .filter(|s| {
            s.lane == span.lane && s.parent == span.id && s.start >= span.start && s.start <= end
        })
        .map(|s| s.duration)
        .sum();
    span.duration.saturating_sub(children)
}
