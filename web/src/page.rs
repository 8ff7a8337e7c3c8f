//! One frame of the page: the header (the stream's figures, pause, the
//! window), the timeline, and the side panel (search, the selected
//! name's statistics). Input becomes an [`Action`], applied after
//! drawing, so that drawing only reads the model.

use std::time::Duration;

use egui::{Color32, Context, Rect, RichText, Sense};
use serde::Serialize;
use std::collections::VecDeque;
use typhon_live_model::history::{self, SpanRecord};

use typhon_live_core::Level;
use typhon_live_model::allocated::allocated_line;
use typhon_live_model::marks::LATENCY_MARK;
use typhon_live_model::memory::bytes;
use typhon_live_model::{
    Connection, FieldSummary, LogQuery, LogRow, LogSearch, Model, SiteSummary, SpanStats, Summary,
    TimelineInputs,
};
use typhon_live_recorder::{Recorder, Settings};

use crate::feed::Feed;
use crate::selection::Selection;
use crate::timeline::{self, duration, BarKind, Geometry, Layout, Style};
use crate::view::{View, Window};

/// The page's history budget by default (`?history=MiB` sets another):
/// sixteen tabs stay within 4 GiB.
pub const DEFAULT_HISTORY_BYTES: usize = 256 << 20;
/// The figures in the header are taken this often.
const SUMMARY_EVERY: Duration = Duration::from_millis(250);
/// Names listed for a search at most.
const FOUND: usize = 30;
/// Latency marks remembered at most.
const LATENCY_KEPT: usize = 4096;
/// Live, the selected name's statistics are computed again this often.
const RESELECT_EVERY: Duration = Duration::from_secs(1);
/// Log rows the panel holds: the latest matching lines up to the view.
const LOG_ROWS: usize = 1000;
/// Log rows the test hook reports.
const LOG_HOOK_ROWS: usize = 20;
/// Sites in each of the memory panel's two tables.
const SITES_LISTED: usize = 5;

/// What a person asked for in one frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    /// Pause, or follow the stream again.
    TogglePause,
    /// Zoom by a factor (below 1 narrows) around a share of the width.
    Zoom {
        /// The factor.
        factor: f64,
        /// The share of the width under the cursor.
        at: f64,
    },
    /// Move by a share of the width (positive: later).
    Pan(f64),
    /// Select a span name.
    Select(u32),
    /// Show one span, paused.
    Jump(SpanRecord),
    /// Show the moment a log line was recorded, paused.
    ShowTime(u64),
    /// A capture of the past the page kept and the window after it,
    /// downloaded once whole.
    Capture,
}

/// The browser viewer's state: the stream's model and what is shown.
pub struct Page {
    /// What the page knows of the stream.
    pub model: Model,
    feed: Feed,
    /// What is shown.
    pub view: View,
    selection: Option<Selection>,
    selected_at: Duration,
    summary: Option<(Duration, Summary)>,
    /// Paused: the names' statistics over the history the pause pinned
    /// (as the selected name's are), and which pin (its chunks and time).
    paused_stats: Option<((usize, u64), Vec<SpanStats>)>,
    layout: Layout,
    geometry: Geometry,
    pause_button: Option<Rect>,
    /// The names listed beside the timeline, where, and the spans each
    /// line counts.
    listed: Vec<(String, Rect, u64)>,
    /// The selected name's longest occurrences listed, and where.
    longest_listed: Vec<Rect>,
    pointer: Option<egui::Pos2>,
    frames_drawn: u64,
    /// When (the page's clock) the first bytes came, a file's last, and
    /// the first frame with spans was drawn: for the benchmarks.
    first_bytes_at: Option<Duration>,
    file_ended_at: Option<Duration>,
    first_drawn_at: Option<Duration>,
    /// Time spent taking bytes in (decoder, reader, model), as the page
    /// measured it.
    ingest: Duration,
    /// Latency marks drawn: their payload (Unix ns when recorded) and when
    /// the page first drew them; the newest [`LATENCY_KEPT`].
    latency: VecDeque<(u64, Duration)>,
    /// The log's lines matching its query, kept up to date.
    log_search: LogSearch,
    /// The rows the log panel shows, and what they were made for.
    log_rows: Vec<LogRow>,
    log_made_for: Option<(u64, LogQuery, Option<u64>)>,
    /// Where the log's search box and rows (by index in `log_rows`) were
    /// drawn.
    log_search_box: Option<Rect>,
    log_listed: Vec<(usize, Rect)>,
    /// The flight recorder the page keeps: `c` asks it for a capture.
    recorder: Recorder,
    /// Captures made whole, for the browser to download.
    downloads: Vec<Vec<u8>>,
    /// Captures made since the page opened.
    captures: u64,
    /// The allocation site whose stack the memory panel shows (the
    /// fastest-growing one unless one was clicked), and the sites listed
    /// there, and where.
    site_shown: Option<u32>,
    sites_listed: Vec<(SiteSummary, Rect)>,
}

/// What the page's recorder keeps: 30 s of the past within 32 MiB, and a
/// capture at most 64 MiB (the recorder's other defaults).
pub fn recorder_settings() -> Settings {
    Settings {
        keep_bytes: 32 << 20,
        max_capture_bytes: 64 << 20,
        ..Settings::default()
    }
}

impl Page {
    /// A page keeping `history_bytes` of history.
    pub fn new(history_bytes: usize) -> Page {
        let mut model = Model::with_history(
            typhon_live_model::history::DEFAULT_HISTORY_SECONDS,
            history_bytes,
        );
        model.connection = Connection::Connecting { attempt: 1 };
        Page {
            model,
            feed: Feed::new(),
            view: View::default(),
            selection: None,
            paused_stats: None,
            selected_at: Duration::ZERO,
            summary: None,
            layout: Layout::default(),
            geometry: Geometry::default(),
            pause_button: None,
            listed: Vec::new(),
            longest_listed: Vec::new(),
            pointer: None,
            frames_drawn: 0,
            first_bytes_at: None,
            file_ended_at: None,
            first_drawn_at: None,
            ingest: Duration::ZERO,
            latency: VecDeque::new(),
            log_search: LogSearch::default(),
            log_rows: Vec::new(),
            log_made_for: None,
            log_search_box: None,
            log_listed: Vec::new(),
            recorder: Recorder::new(recorder_settings(), Vec::new()),
            downloads: Vec::new(),
            captures: 0,
            site_shown: None,
            sites_listed: Vec::new(),
        }
    }

    /// Takes in bytes of the stream that arrived at `now`; returns what
    /// to tell the server when it is due ([`Feed::say_read`]).
    pub fn take(&mut self, bytes: &[u8], now: Duration) -> Option<String> {
        self.first_bytes_at.get_or_insert(now);
        self.feed
            .push(bytes, &mut self.model, &mut self.recorder, now);
        self.feed.say_read()
    }

    /// Taking bytes in took `took` (the page measures it around
    /// [`Page::take`]: the model reads no clock).
    pub fn ingest_took(&mut self, took: Duration) {
        self.ingest += took;
    }

    /// The stream's connection opened (again, if one was lost).
    pub fn connected(&mut self, peer: String) {
        self.feed.connected(&mut self.model);
        self.model.connection = Connection::Connected { peer };
    }

    /// The stream was a recorded file, and it all arrived: the page
    /// shows it paused at its end, and does not connect again.
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

    /// The stream's figures as of `now`, taken at most every
    /// [`SUMMARY_EVERY`].
    fn summary(&mut self, now: Duration) -> &Summary {
        let due = self
            .summary
            .as_ref()
            .is_none_or(|(at, _)| now.saturating_sub(*at) >= SUMMARY_EVERY);
        if due {
            self.summary = Some((now, self.model.summary(now)));
        }
        &self
            .summary
            .get_or_insert_with(|| (now, self.model.summary(now)))
            .1
    }

    /// Draws one frame at `now` and applies what the person asked for.
    pub fn ui(&mut self, ctx: &Context, now: Duration) {
        self.summary(now);
        let live = self.model.timeline_inputs(now);
        if let Some(name) = self.view.selected {
            let chunks = &self.view.pinned().unwrap_or(&live).chunks;
            // Live, the history moves every frame: the statistics follow
            // it at most every RESELECT_EVERY.
            let stale = match &self.selection {
                Some(s) if s.name == name => {
                    !s.is_for(name, chunks)
                        && now.saturating_sub(self.selected_at) >= RESELECT_EVERY
                }
                _ => true,
            };
            if stale {
                self.selection = Some(Selection::of(name, chunks, self.model.names()));
                self.selected_at = now;
            }
        }
        let mut actions = Vec::new();
        self.header(ctx, &mut actions);
        self.side_panel(ctx, &mut actions);
        self.log_panel(ctx, &mut actions);
        self.memory_panel(ctx);
        let inputs = self.view.pinned().unwrap_or(&live);
        let window = self.view.window(inputs.now);
        let (layout, geometry) =
            central(ctx, &self.model, &self.view, inputs, window, &mut actions);
        if layout.bars > 0 {
            self.first_drawn_at.get_or_insert(now);
        }
        self.note_latency_marks(&layout, now);
        self.layout = layout;
        self.geometry = geometry;
        self.frames_drawn += 1;
        self.pointer = ctx.input(|i| i.pointer.latest_pos());
        for action in actions {
            self.apply(action, now);
        }
    }

    /// Records each latency mark ([`LATENCY_MARK`]) drawn for the first
    /// time in `layout`, at `now`.
    fn note_latency_marks(&mut self, layout: &Layout, now: Duration) {
        let Some(mark) = self
            .model
            .names()
            .iter()
            .find(|(_, text)| *text == LATENCY_MARK)
            .map(|(id, _)| id)
        else {
            return;
        };
        let newest = self.latency.back().map_or(0, |&(sent, _)| sent);
        let mut drawn: Vec<u64> = layout
            .lanes
            .iter()
            .flat_map(|lane| &lane.instants)
            .filter(|(_, i)| i.name == mark && i.payload > newest)
            .map(|(_, i)| i.payload)
            .collect();
        drawn.sort_unstable();
        for sent in drawn {
            if self.latency.len() >= LATENCY_KEPT {
                self.latency.pop_front();
            }
            self.latency.push_back((sent, now));
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
        }
    }

    /// A capture made whole since last asked, as a trace file's bytes,
    /// for the browser to download.
    pub fn take_download(&mut self) -> Option<Vec<u8>> {
        self.recorder.now_with(0, self.model.state());
        while let Some(capture) = self.recorder.take() {
            self.captures += 1;
            self.model.notice = Some(format!(
                "captured {:.1} s of the stream ({} bytes): downloaded",
                (capture.end - capture.begin) as f64 / 1e9,
                capture.bytes.len()
            ));
            self.downloads.push(capture.bytes);
        }
        self.downloads.pop()
    }

    /// The log, under the timeline, once the stream has sent a line: its
    /// search, its least level, its counts, and its lines up to where the
    /// view is (a click shows the moment a line was recorded).
    fn log_panel(&mut self, ctx: &Context, actions: &mut Vec<Action>) {
        let logs = self.model.logs();
        self.log_search_box = None;
        self.log_listed.clear();
        if logs.received() == 0 && logs.lost == 0 {
            return;
        }
        self.log_search.set_query(self.view.log_query.clone());
        self.log_search.update(logs, self.model.names());
        let made_for = (
            logs.received(),
            self.view.log_query.clone(),
            self.view.paused_at(),
        );
        if self.log_made_for.as_ref() != Some(&made_for) {
            self.log_rows = self.model.log_rows(&self.log_search, made_for.2, LOG_ROWS);
            self.log_made_for = Some(made_for);
        }
        let (matched, kept, lost, evicted) = (
            self.log_search.matched().len(),
            logs.lines().len(),
            logs.lost,
            logs.evicted,
        );
        let query = &mut self.view.log_query;
        let rows = &self.log_rows;
        let (search_box, listed) = (&mut self.log_search_box, &mut self.log_listed);
        egui::TopBottomPanel::bottom("log")
            .resizable(true)
            .default_height(180.0)
            .show(ctx, |ui| {
                ui.horizontal(|ui| {
                    ui.label("log");
                    *search_box = Some(ui.text_edit_singleline(&mut query.text).rect);
                    egui::ComboBox::from_id_salt("log level")
                        .selected_text(query.min_level.map_or("all", Level::as_str))
                        .show_ui(ui, |ui| {
                            ui.selectable_value(&mut query.min_level, None, "all");
                            for level in [Level::Debug, Level::Info, Level::Warn, Level::Error] {
                                ui.selectable_value(
                                    &mut query.min_level,
                                    Some(level),
                                    level.as_str(),
                                );
                            }
                        });
                    let mut counts = format!("{matched} of {kept} lines");
                    if lost > 0 || evicted > 0 {
                        counts += &format!(" · {lost} lost · {evicted} aged out");
                    }
                    ui.label(RichText::new(counts).color(if lost > 0 {
                        timeline::ALARM
                    } else {
                        Color32::GRAY
                    }));
                });
                // Only the rows in sight are laid out.
                let row_height =
                    ui.text_style_height(&egui::TextStyle::Body) + ui.spacing().item_spacing.y;
                egui::ScrollArea::vertical()
                    .stick_to_bottom(true)
                    .auto_shrink(false)
                    .show_rows(ui, row_height, rows.len(), |ui, in_sight| {
                        for (index, row) in rows
                            .iter()
                            .enumerate()
                            .skip(in_sight.start)
                            .take(in_sight.len())
                        {
                            let line = ui.horizontal(|ui| {
                                let time = ui.link(format!("{:.3} s", row.seconds));
                                ui.label(RichText::new(row.level).color(level_colour(row.level)));
                                ui.label(RichText::new(&row.lane).color(Color32::LIGHT_BLUE));
                                ui.label(&row.text);
                                time
                            });
                            listed.push((index, line.response.rect));
                            if line.inner.clicked() {
                                actions.push(Action::ShowTime((row.seconds * 1e9) as u64));
                            }
                        }
                    });
            });
    }

    fn header(&mut self, ctx: &Context, actions: &mut Vec<Action>) {
        let paused = self.view.is_paused();
        let Some((_, s)) = &self.summary else { return };
        let window = self.view.length();
        egui::TopBottomPanel::top("header").show(ctx, |ui| {
            ui.horizontal_wrapped(|ui| {
                let label = if paused { "▶ resume" } else { "⏸ pause" };
                let button = ui.button(label);
                self.pause_button = Some(button.rect);
                if button.clicked() {
                    actions.push(Action::TogglePause);
                }
                ui.label(RichText::new(&s.process).strong());
                ui.label(connection_text(&s.connection));
                ui.label(format!("window {}", duration(window)));
                ui.label(format!("{:.0} events/s", s.events_per_second));
                let lost = format!(
                    "lost: {} frames, {} events · damaged {} · restarts {} · reconnects {}",
                    s.frames_dropped, s.events_dropped, s.frames_damaged, s.restarts, s.reconnects
                );
                let alarm = s.lost_any();
                ui.label(RichText::new(lost).color(if alarm {
                    timeline::ALARM
                } else {
                    Color32::GRAY
                }));
                ui.label(format!(
                    "history {:.1} s, {} / {} MiB",
                    s.history.seconds,
                    s.history.bytes >> 20,
                    s.history.budget_bytes >> 20
                ));
                if let Some(notice) = &s.notice {
                    ui.label(RichText::new(notice).color(timeline::OPEN));
                }
            });
        });
        if ctx.input(|i| i.key_pressed(egui::Key::Space)) && !ctx.wants_keyboard_input() {
            actions.push(Action::TogglePause);
        }
        if ctx.input(|i| i.key_pressed(egui::Key::C)) && !ctx.wants_keyboard_input() {
            actions.push(Action::Capture);
        }
    }

    fn side_panel(&mut self, ctx: &Context, actions: &mut Vec<Action>) {
        // Paused, the list is over what the selected name's statistics
        // are over: the pinned history, not the live one.
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
        let view = &mut self.view;
        let selection = self.selection.as_ref();
        let model = &self.model;
        let lanes = &self.layout.lanes;
        let listed = &mut self.listed;
        listed.clear();
        let longest_listed = &mut self.longest_listed;
        longest_listed.clear();
        egui::SidePanel::right("names")
            .default_width(320.0)
            .show(ctx, |ui| {
                ui.horizontal(|ui| {
                    ui.label("search");
                    ui.text_edit_singleline(&mut view.search);
                });
                let needle = view.search.to_lowercase();
                egui::ScrollArea::vertical()
                    .max_height(220.0)
                    .id_salt("found")
                    .show(ui, |ui| {
                        for s in stats
                            .iter()
                            .filter(|s| s.name.to_lowercase().contains(&needle))
                            .take(FOUND)
                        {
                            let mut text =
                                format!("{}  ×{}  {:.2} ms", s.name, s.count, s.total_ms);
                            if s.allocated_bytes > 0 {
                                text += &format!("  {}", bytes(s.allocated_bytes as f64));
                            }
                            let row = ui.selectable_label(view.selected == Some(s.id), text);
                            listed.push((s.name.clone(), row.rect, s.count));
                            if row.clicked() {
                                actions.push(Action::Select(s.id));
                            }
                        }
                    });
                ui.separator();
                let Some(selected) = selection else {
                    ui.label("click a span, or a name above, for its statistics");
                    return;
                };
                let d = &selected.distribution;
                ui.heading(model.name(selected.name));
                egui::Grid::new("stats").show(ui, |ui| {
                    let mut rows = vec![
                        ("count", d.count.to_string()),
                        ("p50", duration(d.p50)),
                        ("p90", duration(d.p90)),
                        ("p99", duration(d.p99)),
                        ("max", duration(d.max)),
                        ("mean", duration(d.mean as u64)),
                        ("total", duration(d.total)),
                    ];
                    if d.busy < d.total {
                        // Task spans: the time their polls ran, and waited.
                        rows.push(("busy", duration(d.busy)));
                        rows.push(("idle", duration(d.total - d.busy)));
                    }
                    for (what, value) in rows {
                        ui.label(what);
                        ui.label(value);
                        ui.end_row();
                    }
                });
                histogram(ui, d, 80.0, duration);
                if let Some(line) = allocated_line(d.allocated, d.count) {
                    ui.label(line);
                }
                if let Some(cpu) = &selected.cpu {
                    for line in cpu.lines(&model.name(selected.name)) {
                        ui.label(line);
                    }
                }
                for field in &selected.fields {
                    field_table(ui, field);
                }
                ui.label("longest (click to show):");
                for (span, allocated) in selected.longest.iter().zip(&selected.longest_allocated) {
                    let lane = lanes
                        .iter()
                        .find(|l| l.id == span.lane)
                        .map_or("?", |l| &l.name);
                    let mut text = format!(
                        "{} at {:.3} s on {lane}",
                        duration(span.duration),
                        span.start as f64 / 1e9,
                    );
                    if let Some(allocated) = allocated {
                        text += &format!(", allocated {}", bytes(*allocated as f64));
                    }
                    let link = ui.link(text);
                    longest_listed.push(link.rect);
                    if link.clicked() {
                        actions.push(Action::Jump(*span));
                    }
                }
            });
    }

    /// The allocation sites, below the timeline, where the stream tells
    /// the memory: the fastest-growing and the largest, and the stack of
    /// the one shown (click a site for its).
    fn memory_panel(&mut self, ctx: &Context) {
        self.sites_listed.clear();
        let Some(memory) = self.summary.as_ref().and_then(|(_, s)| s.memory.as_ref()) else {
            return;
        };
        let shown = self
            .site_shown
            .or(memory.sites_by_growth.first().map(|s| s.site));
        let (listed, clicked) = (&mut self.sites_listed, &mut self.site_shown);
        egui::TopBottomPanel::bottom("memory")
            .resizable(true)
            .default_height(150.0)
            .show(ctx, |ui| {
                ui.label(RichText::new(format!("allocation sites: {}", memory.says())).strong());
                ui.columns(2, |columns| {
                    let tables = [
                        ("growing fastest (last minute)", &memory.sites_by_growth),
                        ("holding the most", &memory.sites_by_live),
                    ];
                    for (ui, (heading, sites)) in columns.iter_mut().zip(tables) {
                        ui.label(heading);
                        egui::Grid::new(heading).striped(true).show(ui, |ui| {
                            for site in sites.iter().take(SITES_LISTED) {
                                ui.label(bytes(site.live as f64));
                                ui.label(RichText::new(site.growth()).color(timeline::OPEN));
                                ui.label(site.samples());
                                let link = ui.link(&site.label);
                                if link.clicked() {
                                    *clicked = Some(site.site);
                                }
                                listed.push((site.clone(), link.rect));
                                ui.end_row();
                            }
                        });
                    }
                });
                let stack = (memory.sites_by_growth.iter())
                    .chain(&memory.sites_by_live)
                    .find(|s| Some(s.site) == shown);
                if let Some(site) = stack {
                    ui.separator();
                    ui.label(format!("stack of {}:", site.label));
                    egui::ScrollArea::vertical()
                        .max_height(80.0)
                        .show(ui, |ui| {
                            for frame in &site.stack {
                                ui.monospace(frame);
                            }
                        });
                }
            });
    }

    /// The page as a test reads it: the model's summary, the view, what
    /// was drawn and where the controls are (CSS pixels).
    pub fn hook(&mut self, now: Duration) -> String {
        let mut summary = self.model.summary(now);
        self.model.fill_exact(&mut summary.span_stats);
        let window = self.layout.window;
        let hook = Hook {
            summary,
            paused: self.view.is_paused(),
            window,
            frames_drawn: self.frames_drawn,
            bytes: self.feed.bytes(),
            frames: self.feed.frames(),
            bars: self.layout.bars,
            open_bars: self
                .layout
                .lanes
                .iter()
                .flat_map(|l| &l.bars)
                .filter(|b| matches!(b.kind, BarKind::Open(_)))
                .count(),
            overrun_ticks: self.layout.ticks.iter().filter(|t| t.2.overrun).count(),
            task_bars: self.layout.tasks.bars.len(),
            task_polls: self.layout.tasks.polls.len(),
            task_rows: self.layout.tasks.rows,
            cpu_strips: self.layout.lanes.iter().filter(|l| l.cpu.is_some()).count(),
            selected: self.selection.as_ref().map(|s| Selected {
                name: self.model.name(s.name),
                count: s.distribution.count,
                p50: s.distribution.p50,
                p99: s.distribution.p99,
                max: s.distribution.max,
                longest: s.longest.len(),
                longest_at: self.longest_listed.iter().map(|r| css(*r)).collect(),
                fields: s.fields.clone(),
                cpu: s.cpu.map(|cpu| cpu.lines(&self.model.name(s.name))),
                allocated: allocated_line(s.distribution.allocated, s.distribution.count),
            }),
            listed: self
                .listed
                .iter()
                .map(|(name, r, count)| (name.clone(), css(*r), *count))
                .collect(),
            pointer: self.pointer.map(|p| [p.x, p.y]),
            first_bytes_ms: self.first_bytes_at.map(ms),
            file_ended_ms: self.file_ended_at.map(ms),
            first_drawn_ms: self.first_drawn_at.map(ms),
            ingest_ms: ms(self.ingest),
            latency_marks: self
                .latency
                .iter()
                .map(|&(sent, at)| (sent, ms(at)))
                .collect(),
            pause_button: self.pause_button.map(css),
            timeline: self.geometry.rect.map(css),
            captures: self.captures,
            triggers: self
                .layout
                .triggers
                .iter()
                .map(|(x, t)| (self.model.name(t.label), *x))
                .collect(),
            log: self.log_made_for.as_ref().map(|_| LogHook {
                matched: self.log_search.matched().len(),
                kept: self.model.logs().lines().len(),
                lost: self.model.logs().lost,
                shown: (self.log_listed.iter().rev().take(LOG_HOOK_ROWS))
                    .filter_map(|&(index, at)| Some((self.log_rows.get(index)?.clone(), css(at))))
                    .collect(),
                search_box: self.log_search_box.map(css),
            }),
            sites_listed: (self.sites_listed.iter())
                .map(|(site, at)| (site.label.clone(), site.live, css(*at)))
                .collect(),
            memory_strip: self.layout.memory.as_ref().map_or(0, |m| m.points.len()),
        };
        serde_json::to_string(&hook).unwrap_or_default()
    }
}

/// What [`Page::hook`] reports.
#[derive(Serialize)]
struct Hook {
    summary: Summary,
    paused: bool,
    window: Option<Window>,
    frames_drawn: u64,
    bytes: u64,
    frames: u64,
    bars: usize,
    open_bars: usize,
    overrun_ticks: usize,
    /// Task spans drawn, their polls, and the rows they take.
    task_bars: usize,
    /// See `task_bars`.
    task_polls: usize,
    /// See `task_bars`.
    task_rows: usize,
    /// Lanes drawn with a CPU strip.
    cpu_strips: usize,
    selected: Option<Selected>,
    /// Each name listed: its name, where, and its count.
    listed: Vec<(String, [f32; 4], u64)>,
    /// Where egui last saw the pointer.
    pointer: Option<[f32; 2]>,
    /// The page's clock (ms since it was opened) when the first bytes
    /// came, a file's last, and the first spans were drawn.
    first_bytes_ms: Option<f64>,
    file_ended_ms: Option<f64>,
    first_drawn_ms: Option<f64>,
    /// Milliseconds spent in the decoder, reader and model.
    ingest_ms: f64,
    /// Latency marks drawn: (Unix ns when recorded, the page's clock in
    /// ms when first drawn).
    latency_marks: Vec<(u64, f64)>,
    pause_button: Option<[f32; 4]>,
    timeline: Option<[f32; 4]>,
    /// A capture's triggers drawn: each label, and its x in the timeline.
    triggers: Vec<(String, f32)>,
    /// Captures made whole (the `c` key), downloaded.
    captures: u64,
    /// The log panel, once the stream sent a line.
    log: Option<LogHook>,
    /// The memory panel's sites: label, live bytes, and where drawn.
    sites_listed: Vec<(String, u64, [f32; 4])>,
    /// Points of the memory strip drawn.
    memory_strip: usize,
}

/// The log panel, as [`Page::hook`] reports it.
#[derive(Serialize)]
struct LogHook {
    /// Lines matching the search, lines kept, lines the stream lost.
    matched: usize,
    kept: usize,
    lost: u64,
    /// The last rows drawn, newest first, and where.
    shown: Vec<(LogRow, [f32; 4])>,
    /// Where the search box is.
    search_box: Option<[f32; 4]>,
}

/// A log line's level, coloured as the terminal view colours it.
fn level_colour(level: &str) -> Color32 {
    match level {
        "ERROR" => timeline::ALARM,
        "WARN" => Color32::YELLOW,
        "INFO" => Color32::LIGHT_GREEN,
        _ => Color32::GRAY,
    }
}

/// The selected name's statistics, as [`Page::hook`] reports them (ns).
#[derive(Serialize)]
struct Selected {
    name: String,
    count: u64,
    p50: u64,
    p99: u64,
    max: u64,
    longest: usize,
    /// Where each of the longest is listed, longest first.
    longest_at: Vec<[f32; 4]>,
    /// Its fields, as the panel lists them.
    fields: Vec<FieldSummary>,
    /// Its share of CPU, as the panel says it.
    cpu: Option<[String; 2]>,
    /// The bytes its spans allocated, as the panel says it.
    allocated: Option<String>,
}

/// A field of the selected name: a string field's values with their
/// spans' count and percentiles, or a numeric field's percentiles.
fn field_table(ui: &mut egui::Ui, field: &FieldSummary) {
    if let Some(n) = &field.numbers {
        ui.label(format!(
            "{}: p50 {}  p99 {}  max {}  ({} values)",
            field.key, n.p50, n.p99, n.max, n.count
        ));
        histogram(ui, n, 40.0, |v| v.to_string());
        return;
    }
    ui.label(format!("by {} ({} values):", field.key, field.values));
    egui::Grid::new(("field", &field.key)).show(ui, |ui| {
        for what in ["value", "count", "p50", "p99"] {
            ui.label(what);
        }
        ui.end_row();
        for group in &field.groups {
            let d = &group.durations;
            ui.label(&group.value);
            ui.label(d.count.to_string());
            ui.label(duration(d.p50));
            ui.label(duration(d.p99));
            ui.end_row();
        }
    });
}

fn ms(at: Duration) -> f64 {
    at.as_secs_f64() * 1e3
}

fn css(r: Rect) -> [f32; 4] {
    [r.left(), r.top(), r.width(), r.height()]
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

/// The timeline, and the pointer over it.
fn central(
    ctx: &Context,
    model: &Model,
    view: &View,
    inputs: &TimelineInputs,
    window: Window,
    actions: &mut Vec<Action>,
) -> (Layout, Geometry) {
    egui::CentralPanel::default()
        .show(ctx, |ui| {
            let rect = ui.available_rect_before_wrap();
            let response = ui.allocate_rect(rect, Sense::click_and_drag());
            let layout = timeline::lay_out(inputs, window, rect.width());
            let needle = view.search.to_lowercase();
            let highlight = |name: u32| {
                view.selected == Some(name)
                    || (!needle.is_empty()
                        && model.names().show(name).to_lowercase().contains(&needle))
            };
            let style = Style {
                name: &|id| model.name(id),
                highlight: &highlight,
                any_highlight: view.selected.is_some() || !needle.is_empty(),
            };
            let geometry = timeline::paint(ui.painter(), rect, &layout, &style);
            if let Some(pos) = response.hover_pos() {
                let at = f64::from((pos.x - rect.left()) / rect.width().max(1.0));
                let (wheel, zoom) = ui.input(|i| (i.raw_scroll_delta.y, i.zoom_delta()));
                if wheel != 0.0 {
                    actions.push(Action::Zoom {
                        factor: (-f64::from(wheel) * 0.002).exp(),
                        at,
                    });
                } else if zoom != 1.0 {
                    actions.push(Action::Zoom {
                        factor: 1.0 / f64::from(zoom),
                        at,
                    });
                }
            }
            let dragged = response.drag_delta().x;
            if dragged != 0.0 {
                actions.push(Action::Pan(-f64::from(dragged / rect.width().max(1.0))));
            }
            let hit = response
                .hover_pos()
                .and_then(|pos| geometry.bar_at(&layout, pos));
            if let Some((lane, bar)) = hit {
                if response.clicked() {
                    match bar.kind {
                        BarKind::Span(span) => actions.push(Action::Select(span.name)),
                        BarKind::Open(span) => actions.push(Action::Select(span.name)),
                        BarKind::Folded(_) => {}
                    }
                }
                response.on_hover_ui_at_pointer(|ui| tooltip(ui, model, inputs, &lane.name, bar));
            }
            (layout, geometry)
        })
        .inner
}

/// What hovering a bar says.
fn tooltip(
    ui: &mut egui::Ui,
    model: &Model,
    inputs: &TimelineInputs,
    lane: &str,
    bar: &timeline::Bar,
) {
    let tick = |time: u64| {
        typhon_live_model::history::tick_at(inputs.chunks.iter().map(|c| &**c), time)
            .map_or_else(|| "-".into(), |t| format!("#{}", t.tick))
    };
    match bar.kind {
        BarKind::Span(span) => {
            ui.label(RichText::new(model.name(span.name)).strong());
            ui.label(format!("duration {}", duration(span.duration)));
            ui.label(format!("self {}", duration(self_time(inputs, &span))));
            if span.has_arg {
                ui.label(format!("arg {}", span.arg));
            }
            ui.label(format!("lane {lane}, tick {}", tick(span.start)));
        }
        BarKind::Open(span) => {
            ui.label(
                RichText::new(model.name(span.name))
                    .strong()
                    .color(timeline::OPEN),
            );
            ui.label(format!(
                "open for {}",
                duration(inputs.now.saturating_sub(span.start))
            ));
            ui.label(format!("lane {lane}, tick {}", tick(span.start)));
        }
        BarKind::Folded(n) => {
            ui.label(format!("{n} spans, each narrower than a pixel: zoom in"));
        }
    }
}

/// A span's time outside its children: its children are the spans of
/// its lane whose parent it is, within it.
fn self_time(inputs: &TimelineInputs, span: &SpanRecord) -> u64 {
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

/// The distribution's histogram, `height` pixels tall: log-spaced buckets
/// from the least value to the greatest, both written by `label`.
fn histogram(
    ui: &mut egui::Ui,
    d: &typhon_live_model::stats::Distribution,
    height: f32,
    label: fn(u64) -> String,
) {
    let (rect, _) =
        ui.allocate_exact_size(egui::vec2(ui.available_width(), height), Sense::hover());
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 0.0, Color32::from_gray(30));
    let most = d.histogram.iter().copied().max().unwrap_or(0).max(1) as f32;
    let width = rect.width() / d.histogram.len().max(1) as f32;
    for (i, &n) in d.histogram.iter().enumerate() {
        let h = (n as f32 / most) * (rect.height() - 12.0);
        let x = rect.left() + i as f32 * width;
        let bar = Rect::from_min_max(
            egui::pos2(x + 1.0, rect.bottom() - 12.0 - h),
            egui::pos2(x + width - 1.0, rect.bottom() - 12.0),
        );
        painter.rect_filled(bar, 0.0, Color32::from_rgb(0x70, 0xa0, 0xd0));
    }
    let font = egui::FontId::proportional(10.0);
    painter.text(
        rect.left_bottom(),
        egui::Align2::LEFT_BOTTOM,
        label(d.min),
        font.clone(),
        Color32::GRAY,
    );
    painter.text(
        rect.right_bottom(),
        egui::Align2::RIGHT_BOTTOM,
        label(d.max),
        font,
        Color32::GRAY,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use egui::{Event, MouseWheelUnit, Pos2, RawInput};
    use typhon_live_tests::nested_stream;

    /// One frame of `page` at `now`, with `events`, on a 1000 × 600
    /// screen.
    fn frame(page: &mut Page, ctx: &Context, now: Duration, events: Vec<Event>) {
        let input = RawInput {
            screen_rect: Some(Rect::from_min_size(Pos2::ZERO, egui::vec2(1000.0, 600.0))),
            events,
            ..RawInput::default()
        };
        let _ = ctx.run(input, |ctx| page.ui(ctx, now));
    }

    fn hook(page: &mut Page) -> Value {
        serde_json::from_str(&page.hook(Duration::ZERO)).unwrap()
    }

    use serde_json::Value;

    /// A stream of one lane with a latency mark recorded at `sent` (Unix
    /// ns), on a clock in ns at 1 s.
    fn latency_stream(sent: u64) -> Vec<u8> {
        use typhon_live_core::block::{block_scratch_len, max_block_frame_len, write_block};
        use typhon_live_core::init::write_init;
        use typhon_live_core::{BlockBuilder, Event, LaneInfo, LaneKind, Metadata, NameTable};
        let mut names: NameTable<4, 64> = NameTable::new();
        let lane = names.intern("main").unwrap();
        let mark = names.intern(LATENCY_MARK).unwrap();
        let meta = Metadata {
            ticks_per_second: 1_000_000_000,
            session_id: 1,
            ..Metadata::default()
        };
        let lanes = [LaneInfo {
            id: 0,
            name: lane,
            kind: LaneKind::Main,
        }];
        let mut out = vec![0u8; 4096];
        let n = write_init(&mut out, 0, &meta, &names, lanes.into_iter()).unwrap();
        let mut stream = out[..n].to_vec();
        let mut scratch = vec![0u8; block_scratch_len(16)];
        let mut out = vec![0u8; max_block_frame_len(scratch.len(), 0)];
        let mut block = BlockBuilder::new(&mut scratch);
        let instant = Event::Instant {
            time: 1_000_000_000,
            name: mark,
            payload: sent,
        };
        assert!(block.push(0, &instant));
        let n = write_block(&mut out, 0, &block, &[]).unwrap();
        stream.extend_from_slice(&out[..n]);
        stream
    }

    #[test]
    fn task_spans_are_laid_out_on_their_tracks() {
        let stream = typhon_live_tests::task_stream();
        let mut page = Page::new(64 << 20);
        page.connected("test".into());
        page.take(&stream, Duration::ZERO);
        let ctx = Context::default();
        frame(&mut page, &ctx, Duration::ZERO, Vec::new());
        let hook = hook(&mut page);
        assert_eq!(
            (&hook["task_bars"], &hook["task_polls"], &hook["task_rows"]),
            (&Value::from(1), &Value::from(2), &Value::from(1)),
            "{hook}"
        );
    }

    #[test]
    fn the_memory_panel_lists_the_growing_site_first_and_shows_its_stack() {
        let mut page = Page::new(64 << 20);
        page.connected("test".into());
        page.take(&typhon_live_tests::memory_stream(), Duration::ZERO);
        page.view.zoom(100.0, 1.0, 10_000_000_000);
        let ctx = Context::default();
        frame(&mut page, &ctx, Duration::ZERO, Vec::new());
        let hook = hook(&mut page);
        let listed: Vec<_> = (hook["sites_listed"].as_array().into_iter().flatten())
            .map(|s| (s[0].as_str().unwrap_or_default().to_owned(), s[1].as_u64()))
            .collect();
        assert_eq!(
            listed,
            [
                ("demo::cache_replay_frame".to_owned(), Some(10_000_000)),
                ("demo::load_level".to_owned(), Some(50_000_000)),
                ("demo::cache_replay_frame".to_owned(), Some(10_000_000)),
            ],
            "{hook}"
        );
        // The strip: every reading, the window the whole 10 s.
        assert_eq!(hook["memory_strip"], Value::from(11), "{hook}");
        assert_eq!(hook["summary"]["memory"]["live"], Value::from(160_000_000));
    }

    #[test]
    fn the_log_shows_searches_and_shows_when_a_line_was_recorded() {
        let mut page = Page::new(64 << 20);
        page.connected("test".into());
        page.take(&typhon_live_tests::text_stream(), Duration::ZERO);
        let ctx = Context::default();
        frame(&mut page, &ctx, Duration::ZERO, Vec::new());
        frame(&mut page, &ctx, Duration::ZERO, Vec::new());
        let log = hook(&mut page)["log"].clone();
        assert_eq!(
            (&log["matched"], &log["kept"]),
            (&Value::from(2), &Value::from(2)),
            "{log}"
        );
        let shown: Vec<_> = (log["shown"].as_array().into_iter().flatten())
            .map(|s| {
                (
                    s[0]["level"].clone(),
                    s[0]["lane"].clone(),
                    s[0]["text"].clone(),
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                (Value::from("INFO"), Value::from("-"), Value::from("bye")),
                (
                    Value::from("WARN"),
                    Value::from("main"),
                    Value::from("disk full dev=sda")
                ),
            ],
            "newest first: {log}"
        );
        assert!(log["search_box"].is_array(), "{log}");
        page.view.log_query.min_level = Some(Level::Warn);
        frame(&mut page, &ctx, Duration::ZERO, Vec::new());
        assert_eq!(hook(&mut page)["log"]["matched"], 1);
        // A line's moment, shown paused in the middle of the window.
        page.apply(Action::ShowTime(10_000_000_000), Duration::ZERO);
        let window = page.view.window(0);
        assert!(page.view.is_paused());
        assert_eq!(window.start + window.len() / 2, 10_000_000_000);
    }

    #[test]
    fn a_latency_mark_is_recorded_once_when_first_drawn() {
        let mut page = Page::new(64 << 20);
        page.connected("test".into());
        page.take(&latency_stream(1_700_000_000_123_456_789), Duration::ZERO);
        let ctx = Context::default();
        for at in [10, 20, 30] {
            frame(&mut page, &ctx, Duration::from_millis(at), vec![]);
        }
        let marks = hook(&mut page)["latency_marks"].clone();
        assert_eq!(
            marks,
            serde_json::json!([[1_700_000_000_123_456_789u64, 10.0]]),
            "{marks}"
        );
    }

    #[test]
    fn a_capture_opens_paused_on_its_trigger() {
        let mut page = Page::new(64 << 20);
        page.connected("test".into());
        page.take(&typhon_live_tests::capture_stream(), Duration::ZERO);
        page.file_ended(Duration::ZERO);
        let ctx = Context::default();
        frame(&mut page, &ctx, Duration::ZERO, vec![]);
        let hook = hook(&mut page);
        assert_eq!(hook["paused"], Value::from(true), "{hook}");
        // Tick 42, from 43 ms to 43.95 ms (host ns), shown whole, and the
        // trigger drawn at its end.
        let window = &hook["window"];
        let (start, end) = (
            window["start"].as_u64().unwrap(),
            window["end"].as_u64().unwrap(),
        );
        assert!(start <= 43_000_000 && end >= 43_950_000, "{window}");
        assert_eq!(hook["triggers"][0][0], Value::from("overrun"), "{hook}");
    }

    #[test]
    fn the_wheel_zooms_a_paused_view_around_the_cursor() {
        let mut page = Page::new(64 << 20);
        page.connected("test".into());
        page.take(&nested_stream(0..300), Duration::ZERO);
        let ctx = Context::default();
        frame(&mut page, &ctx, Duration::ZERO, vec![]);
        frame(&mut page, &ctx, Duration::ZERO, vec![]);
        let state = hook(&mut page);
        assert!(state["bars"].as_u64() > Some(0), "{state}");
        let [x, y, w, h] = [0, 1, 2, 3].map(|i| state["timeline"][i].as_f64().unwrap() as f32);
        page.apply(Action::TogglePause, Duration::ZERO);
        frame(&mut page, &ctx, Duration::ZERO, vec![]);
        let before = hook(&mut page)["window"].clone();
        // A quarter of the way across, the wheel turned away (zoom in).
        let at = Pos2::new(x + w / 4.0, y + h / 2.0);
        frame(
            &mut page,
            &ctx,
            Duration::ZERO,
            vec![Event::PointerMoved(at)],
        );
        let wheel = Event::MouseWheel {
            unit: MouseWheelUnit::Point,
            delta: egui::vec2(0.0, 300.0),
            modifiers: egui::Modifiers::NONE,
        };
        frame(&mut page, &ctx, Duration::ZERO, vec![wheel]);
        frame(&mut page, &ctx, Duration::ZERO, vec![]);
        let after = hook(&mut page)["window"].clone();
        let (s0, e0) = (
            before["start"].as_f64().unwrap(),
            before["end"].as_f64().unwrap(),
        );
        let (s1, e1) = (
            after["start"].as_f64().unwrap(),
            after["end"].as_f64().unwrap(),
        );
        assert!(e1 - s1 < (e0 - s0) / 1.5, "{before} -> {after}");
        let (under0, under1) = (s0 + (e0 - s0) / 4.0, s1 + (e1 - s1) / 4.0);
        assert!(
            (under0 - under1).abs() < (e0 - s0) / 100.0,
            "{before} -> {after}"
        );
    }
}
