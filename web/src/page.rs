//! The page's main thread: one frame of egui from the worker's latest
//! [`Scene`] (the header, the timeline, the side panel with the search
//! and the selected name's statistics, the log and the memory), and the
//! [`Ask`] that follows it. Input becomes an [`Action`], sent to the
//! worker with the next ask; nothing here holds the stream.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use egui::{Color32, Context, Rect, RichText, Sense};
use serde::Serialize;
use serde_json::Value;

use typhon_live_core::Level;
use typhon_live_model::allocated::allocated_line;
use typhon_live_model::history::SpanRecord;
use typhon_live_model::marks::LATENCY_MARK;
use typhon_live_model::memory::bytes;
use typhon_live_model::Frame;
use typhon_live_model::{FieldSummary, LogRow, SiteSummary};

use crate::flame::{self, FlameOf};
use crate::scene::{Action, Ask, Hover, Scene};
use crate::source::ms;
use crate::timeline::{self, duration, BarKind, Geometry, Style};
use crate::view::Window;

/// Latency marks remembered at most.
const LATENCY_KEPT: usize = 4096;
/// Log rows the test hook reports.
const LOG_HOOK_ROWS: usize = 20;
/// Flame graph bars the test hook reports.
const FLAME_HOOK_BARS: usize = 200;
/// Sites in each of the memory panel's two tables.
const SITES_LISTED: usize = 5;

/// What the main thread holds: the last scene, what the person is
/// typing, and where things were drawn.
#[derive(Default)]
pub struct Page {
    /// The worker's last answer.
    scene: Scene,
    /// Its names, by id.
    names: HashMap<u32, String>,
    /// The log's rows, as last sent.
    log_rows: Vec<LogRow>,
    /// What the search boxes hold: edited here, sent as they change.
    search: String,
    log_text: String,
    log_level: Option<Level>,
    /// What the person did since the last ask.
    actions: Vec<Action>,
    /// An ask is out, unanswered.
    asking: bool,
    /// The test hook was read since the last ask; the stream's side of
    /// it, sent with the scene shown, not yet drawn; the hook as of the
    /// last scene drawn that came with it.
    hook_wanted: bool,
    stream_hook: Option<String>,
    hook: Option<String>,
    /// Captures to download.
    downloads: Vec<Vec<u8>>,
    geometry: Geometry,
    /// The bar under the pointer.
    hover: Option<Hover>,
    pause_button: Option<Rect>,
    /// The names listed beside the timeline, where, and the spans each
    /// line counts.
    listed: Vec<(String, Rect, u64)>,
    /// The selected name's longest occurrences listed, and where.
    longest_listed: Vec<Rect>,
    pointer: Option<egui::Pos2>,
    frames_drawn: u64,
    /// When (the page's clock) the first frame with spans was drawn.
    first_drawn_at: Option<Duration>,
    /// Latency marks drawn: their payload (Unix ns when recorded) and when
    /// the page first drew them; the newest [`LATENCY_KEPT`].
    latency: VecDeque<(u64, Duration)>,
    /// Where the log's search box and rows (by index in `log_rows`) were
    /// drawn.
    log_search_box: Option<Rect>,
    log_listed: Vec<(usize, Rect)>,
    /// The allocation site whose stack the memory panel shows (the
    /// fastest-growing one unless one was clicked), and the sites listed
    /// there, and where.
    site_shown: Option<u32>,
    sites_listed: Vec<(SiteSummary, Rect)>,
    /// The last span clicked (the flame graph's "this span"), and where
    /// the flame graph was drawn.
    clicked: Option<SpanRecord>,
    flame_drawn: FlameDrawn,
}

/// Where the flame panel drew its graph and its hottest function.
#[derive(Clone, Copy, Debug, Default)]
struct FlameDrawn {
    graph: Option<Rect>,
    hottest: Option<Rect>,
}

impl Page {
    /// A page with nothing to show yet.
    pub fn new() -> Page {
        Page::default()
    }

    /// The worker answered.
    pub fn show(&mut self, mut scene: Scene) {
        self.asking = false;
        self.names = std::mem::take(&mut scene.names).into_iter().collect();
        if let Some(rows) = scene.log_rows.take() {
            self.log_rows = rows;
        }
        if let Some(hook) = scene.hook.take() {
            self.stream_hook = Some(hook);
        }
        self.downloads.extend(scene.download.take());
        self.scene = scene;
    }

    /// What to ask the worker after a frame, unless an ask is out.
    pub fn ask(&mut self) -> Option<Ask> {
        if self.asking {
            return None;
        }
        self.asking = true;
        Some(Ask {
            actions: std::mem::take(&mut self.actions),
            width: self.geometry.rect.map_or(0.0, |r| r.width()),
            hover: self.hover,
            hook: std::mem::take(&mut self.hook_wanted),
        })
    }

    /// The worker stopped (a fault in it, or it could not load): the
    /// header says so, over the last scene, which stays.
    pub fn worker_failed(&mut self, why: String) {
        self.scene.header.notice = Some(why);
    }

    /// A capture to download, as a trace file's bytes.
    pub fn take_download(&mut self) -> Option<Vec<u8>> {
        self.downloads.pop()
    }

    fn name(&self, id: u32) -> String {
        match self.names.get(&id) {
            Some(name) => name.clone(),
            None => format!("#{id}"),
        }
    }

    /// Draws one frame at `now`: what the person does goes with the next
    /// ask.
    pub fn ui(&mut self, ctx: &Context, now: Duration) {
        let mut actions = Vec::new();
        self.header(ctx, &mut actions);
        self.side_panel(ctx, &mut actions);
        self.log_panel(ctx, &mut actions);
        self.memory_panel(ctx);
        self.flame_panel(ctx, &mut actions);
        let (geometry, hover) = self.central(ctx, &mut actions);
        for action in &actions {
            if let Action::Clicked(span) = action {
                self.clicked = Some(*span);
            }
        }
        if self.scene.layout.bars > 0 {
            self.first_drawn_at.get_or_insert(now);
        }
        self.note_latency_marks(now);
        self.geometry = geometry;
        self.hover = hover;
        self.frames_drawn += 1;
        self.pointer = ctx.input(|i| i.pointer.latest_pos());
        self.actions.extend(actions);
        // The hook as of this frame: the stream's side and the page's from
        // one answer, so that a test reads them together.
        if let Some(stream) = self.stream_hook.take() {
            self.hook = Some(self.snapshot(&stream, now));
        }
    }

    /// Records each latency mark ([`LATENCY_MARK`]) drawn for the first
    /// time, at `now`.
    fn note_latency_marks(&mut self, now: Duration) {
        let Some(mark) = (self.names.iter())
            .find(|(_, text)| *text == LATENCY_MARK)
            .map(|(id, _)| *id)
        else {
            return;
        };
        let newest = self.latency.back().map_or(0, |&(sent, _)| sent);
        let mut drawn: Vec<u64> = (self.scene.layout.lanes.iter())
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

    /// The log, under the timeline, once the stream has sent a line: its
    /// search, its least level, its counts, and its lines up to where the
    /// view is (a click shows the moment a line was recorded).
    fn log_panel(&mut self, ctx: &Context, actions: &mut Vec<Action>) {
        self.log_search_box = None;
        self.log_listed.clear();
        let Some(figures) = self.scene.log.clone() else {
            return;
        };
        let asked = (self.log_text.clone(), self.log_level);
        let (text, level) = (&mut self.log_text, &mut self.log_level);
        let rows = &self.log_rows;
        let (search_box, listed) = (&mut self.log_search_box, &mut self.log_listed);
        egui::TopBottomPanel::bottom("log")
            .resizable(true)
            .default_height(180.0)
            .show(ctx, |ui| {
                ui.horizontal(|ui| {
                    ui.label("log");
                    *search_box = Some(ui.text_edit_singleline(text).rect);
                    egui::ComboBox::from_id_salt("log level")
                        .selected_text(level.map_or("all", Level::as_str))
                        .show_ui(ui, |ui| {
                            ui.selectable_value(level, None, "all");
                            for each in [Level::Debug, Level::Info, Level::Warn, Level::Error] {
                                ui.selectable_value(level, Some(each), each.as_str());
                            }
                        });
                    let mut counts = format!("{} of {} lines", figures.matched, figures.kept);
                    if figures.lost > 0 || figures.evicted > 0 {
                        counts +=
                            &format!(" · {} lost · {} aged out", figures.lost, figures.evicted);
                    }
                    ui.label(RichText::new(counts).color(if figures.lost > 0 {
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
                                ui.label(RichText::new(&row.level).color(level_colour(&row.level)));
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
        if (self.log_text.clone(), self.log_level) != asked {
            actions.push(Action::Log {
                text: self.log_text.clone(),
                min_level: self.log_level.map(|level| level as u8),
            });
        }
    }

    fn header(&mut self, ctx: &Context, actions: &mut Vec<Action>) {
        let paused = self.scene.paused;
        let s = &self.scene.header;
        let window = self.scene.window_length;
        egui::TopBottomPanel::top("header").show(ctx, |ui| {
            ui.horizontal_wrapped(|ui| {
                let label = if paused { "▶ resume" } else { "⏸ pause" };
                let button = ui.button(label);
                self.pause_button = Some(button.rect);
                if button.clicked() {
                    actions.push(Action::TogglePause);
                }
                ui.label(RichText::new(&s.process).strong());
                ui.label(&s.connection);
                ui.label(format!("window {}", duration(window)));
                ui.label(format!("{:.0} events/s", s.events_per_second));
                ui.label(RichText::new(&s.lost).color(if s.alarm {
                    timeline::ALARM
                } else {
                    Color32::GRAY
                }));
                ui.label(&s.history);
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
        let scene = &self.scene;
        let search = &mut self.search;
        let asked = search.clone();
        let listed = &mut self.listed;
        listed.clear();
        let longest_listed = &mut self.longest_listed;
        longest_listed.clear();
        egui::SidePanel::right("names")
            .default_width(320.0)
            .show(ctx, |ui| {
                ui.horizontal(|ui| {
                    ui.label("search");
                    ui.text_edit_singleline(search);
                });
                // The worker found them, with the search as last sent.
                egui::ScrollArea::vertical()
                    .max_height(220.0)
                    .id_salt("found")
                    .show(ui, |ui| {
                        for s in &scene.listed {
                            let mut text =
                                format!("{}  ×{}  {:.2} ms", s.name, s.count, s.total_ms);
                            if s.allocated_bytes > 0 {
                                text += &format!("  {}", bytes(s.allocated_bytes as f64));
                            }
                            let row = ui.selectable_label(scene.selected == Some(s.id), text);
                            listed.push((s.name.clone(), row.rect, s.count));
                            if row.clicked() {
                                actions.push(Action::Select(s.id));
                            }
                        }
                    });
                ui.separator();
                let Some(selected) = &scene.selection else {
                    ui.label("click a span, or a name above, for its statistics");
                    return;
                };
                let d = &selected.distribution;
                ui.heading(&selected.name);
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
                for line in selected.cpu.iter().flatten() {
                    ui.label(line);
                }
                for field in &selected.fields {
                    field_table(ui, field);
                }
                ui.label("longest (click to show):");
                for (span, allocated) in &selected.longest {
                    let lane = (scene.layout.lanes.iter())
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
                        // Shown, and the code it ran folded.
                        actions.push(Action::Jump(*span));
                        actions.push(Action::Clicked(*span));
                        actions.push(Action::Flame(FlameOf::Span(*span)));
                    }
                }
            });
        if self.search != asked {
            actions.push(Action::Search(self.search.clone()));
        }
    }

    /// The allocation sites, below the timeline, where the stream tells
    /// the memory: the fastest-growing and the largest, and the stack of
    /// the one shown (click a site for its).
    fn memory_panel(&mut self, ctx: &Context) {
        self.sites_listed.clear();
        let Some(memory) = &self.scene.memory else {
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
                if let Some(site) = shown.and_then(|site| self.scene.site(site)) {
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

    /// Which code ran, below the timeline, where stacks were sampled: what
    /// the graph folds (the selected name, the span clicked, the window,
    /// the span clicked's lane), the graph, and the functions that ran
    /// most. Clicking a frame outlines the spans whose samples ran it.
    fn flame_panel(&mut self, ctx: &Context, actions: &mut Vec<Action>) {
        self.flame_drawn = FlameDrawn::default();
        let Some(flame) = &self.scene.flame else {
            return;
        };
        let of = self.scene.flame_of;
        let clicked = self.clicked;
        let drawn = &mut self.flame_drawn;
        egui::TopBottomPanel::bottom("flame")
            .resizable(true)
            .default_height(220.0)
            .show(ctx, |ui| {
                ui.horizontal(|ui| {
                    ui.label(RichText::new("which code ran:").strong());
                    let mut choose = |ui: &mut egui::Ui, on: bool, text: &str, to: FlameOf| {
                        if ui.selectable_label(on, text).clicked() && !on {
                            actions.push(Action::Flame(to));
                        }
                    };
                    choose(ui, of == FlameOf::Name, "name", FlameOf::Name);
                    if let Some(span) = clicked {
                        choose(
                            ui,
                            of == FlameOf::Span(span),
                            "this span",
                            FlameOf::Span(span),
                        );
                        let lane = FlameOf::Lane(span.lane);
                        choose(ui, of == lane, "its lane", lane);
                    }
                    choose(ui, of == FlameOf::Window, "window", FlameOf::Window);
                    let mut line = format!("{}: {} samples", flame.title, flame.samples);
                    if flame.cut > 0 {
                        line += &format!(", {} cut", flame.cut);
                    }
                    if flame.frame_pointers > 0 {
                        line += &format!(", {} by frame pointers", flame.frame_pointers);
                    }
                    ui.label(line);
                    if flame.marked.is_some() && ui.button("clear outline").clicked() {
                        actions.push(Action::Mark(None));
                    }
                });
                ui.columns(2, |columns| {
                    let (graph, top) = columns.split_at_mut(1);
                    // Deep stacks scroll: the root stays where it was.
                    egui::ScrollArea::vertical()
                        .id_salt("flame graph")
                        .show(&mut graph[0], |ui| {
                            let width = ui.available_width();
                            let (rect, _) = ui.allocate_exact_size(
                                egui::vec2(width, flame::height(flame)),
                                Sense::hover(),
                            );
                            let input = flame::paint(ui, rect, flame);
                            if let Some(bar) = input.clicked.filter(|b| b.depth > 0) {
                                actions.push(Action::Mark(Some(bar.frame)));
                            }
                            drawn.graph = Some(rect);
                        });
                    let ui = &mut top[0];
                    if let Some((function, share, frame)) = &flame.hottest {
                        let text = format!("hottest: {function} ({:.0} %)", share * 100.0);
                        let link = ui.link(RichText::new(text).strong());
                        if link.clicked() {
                            actions.push(Action::Mark(Some(*frame)));
                        }
                        drawn.hottest = Some(link.rect);
                    }
                    ui.label("ran most (self · total samples; click: outline its spans):");
                    egui::Grid::new("top functions")
                        .striped(true)
                        .show(ui, |ui| {
                            for (function, own, total, frame) in &flame.top {
                                ui.label(own.to_string());
                                ui.label(total.to_string());
                                if ui.link(RichText::new(function).monospace()).clicked() {
                                    actions.push(Action::Mark(Some(*frame)));
                                }
                                ui.end_row();
                            }
                        });
                });
            });
    }

    /// The timeline, and the pointer over it: where it was drawn, and the
    /// bar under the pointer.
    fn central(&self, ctx: &Context, actions: &mut Vec<Action>) -> (Geometry, Option<Hover>) {
        let layout = &self.scene.layout;
        egui::CentralPanel::default()
            .show(ctx, |ui| {
                let rect = ui.available_rect_before_wrap();
                let response = ui.allocate_rect(rect, Sense::click_and_drag());
                let needle = self.search.to_lowercase();
                let selected = self.scene.selected;
                let highlight = |name: u32| {
                    selected == Some(name)
                        || (!needle.is_empty()
                            && (self.names.get(&name))
                                .is_some_and(|text| text.to_lowercase().contains(&needle)))
                };
                let marked_spans = self.scene.flame.as_ref().map(|f| &f.marked_spans);
                let marked = |span: &SpanRecord| {
                    marked_spans.is_some_and(|m| {
                        (m.iter())
                            .any(|s| (s.lane, s.start, s.id) == (span.lane, span.start, span.id))
                    })
                };
                let style = Style {
                    name: &|id| self.name(id),
                    highlight: &highlight,
                    any_highlight: selected.is_some() || !needle.is_empty(),
                    marked: &marked,
                };
                let geometry = timeline::paint(ui.painter(), rect, layout, &style);
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
                    .and_then(|pos| geometry.bar_at(layout, pos));
                let mut hover = None;
                if let Some((lane, bar)) = hit {
                    if response.clicked() {
                        match bar.kind {
                            BarKind::Span(span) => {
                                actions.push(Action::Select(span.name));
                                actions.push(Action::Clicked(span));
                            }
                            BarKind::Open(span) => actions.push(Action::Select(span.name)),
                            BarKind::Folded(_) => {}
                        }
                    }
                    hover = Hover::of(&bar.kind);
                    response.on_hover_ui_at_pointer(|ui| self.tooltip(ui, &lane.name, bar));
                }
                (geometry, hover)
            })
            .inner
    }

    /// What hovering a bar says; the tick and the self time once the
    /// worker has found them.
    fn tooltip(&self, ui: &mut egui::Ui, lane: &str, bar: &timeline::Bar) {
        let found = (self.scene.hovered)
            .filter(|h| Hover::of(&bar.kind).is_some_and(|hover| hover == h.hover));
        let tick = match found.and_then(|h| h.tick) {
            Some(tick) => format!("#{tick}"),
            None => "-".into(),
        };
        let now = self.scene.now;
        match bar.kind {
            BarKind::Span(span) => {
                ui.label(RichText::new(self.name(span.name)).strong());
                ui.label(format!("duration {}", duration(span.duration)));
                if let Some(own) = found.and_then(|h| h.self_ns) {
                    ui.label(format!("self {}", duration(own)));
                }
                if span.has_arg {
                    ui.label(format!("arg {}", span.arg));
                }
                ui.label(format!("lane {lane}, tick {tick}"));
            }
            BarKind::Open(span) => {
                ui.label(
                    RichText::new(self.name(span.name))
                        .strong()
                        .color(timeline::OPEN),
                );
                ui.label(format!(
                    "open for {}",
                    duration(now.saturating_sub(span.start))
                ));
                ui.label(format!("lane {lane}, tick {tick}"));
            }
            BarKind::Folded(n) => {
                ui.label(format!("{n} spans, each narrower than a pixel: zoom in"));
            }
        }
    }

    /// The page as a test reads it, as of the last frame drawn of an
    /// answer that came with the stream's side (asked for with the next
    /// ask): the stream's figures, what was drawn and where the controls
    /// are (CSS pixels). `null` until then.
    pub fn hook(&mut self) -> String {
        self.hook_wanted = true;
        self.hook.clone().unwrap_or_else(|| "null".into())
    }

    /// The hook: the page's side at `now`, with the stream's side
    /// `stream`.
    fn snapshot(&self, stream: &str, now: Duration) -> String {
        let layout = &self.scene.layout;
        let selected = self.scene.selection.as_ref();
        let hook = Hook {
            at_ms: ms(now),
            paused: self.scene.paused,
            window: layout.window,
            frames_drawn: self.frames_drawn,
            bars: layout.bars,
            open_bars: (layout.lanes.iter())
                .flat_map(|l| &l.bars)
                .filter(|b| matches!(b.kind, BarKind::Open(_)))
                .count(),
            overrun_ticks: layout.ticks.iter().filter(|t| t.2.overrun).count(),
            task_bars: layout.tasks.bars.len(),
            task_polls: layout.tasks.polls.len(),
            task_rows: layout.tasks.rows,
            cpu_strips: layout.lanes.iter().filter(|l| l.cpu.is_some()).count(),
            selected: selected.map(|s| Selected {
                name: s.name.clone(),
                count: s.distribution.count,
                p50: s.distribution.p50,
                p99: s.distribution.p99,
                max: s.distribution.max,
                longest: s.longest.len(),
                longest_at: self.longest_listed.iter().map(|r| css(*r)).collect(),
                fields: s.fields.clone(),
                cpu: s.cpu.clone(),
                allocated: allocated_line(s.distribution.allocated, s.distribution.count),
            }),
            listed: (self.listed.iter())
                .map(|(name, r, count)| (name.clone(), css(*r), *count))
                .collect(),
            pointer: self.pointer.map(|p| [p.x, p.y]),
            first_drawn_ms: self.first_drawn_at.map(ms),
            latency_marks: (self.latency.iter())
                .map(|&(sent, at)| (sent, ms(at)))
                .collect(),
            pause_button: self.pause_button.map(css),
            timeline: self.geometry.rect.map(css),
            triggers: (layout.triggers.iter())
                .map(|(x, t)| (self.name(t.label), *x))
                .collect(),
            log: self.scene.log.as_ref().map(|figures| LogHook {
                matched: figures.matched,
                kept: figures.kept,
                lost: figures.lost,
                shown: (self.log_listed.iter().rev().take(LOG_HOOK_ROWS))
                    .filter_map(|&(index, at)| Some((self.log_rows.get(index)?.clone(), css(at))))
                    .collect(),
                search_box: self.log_search_box.map(css),
            }),
            sites_listed: (self.sites_listed.iter())
                .map(|(site, at)| (site.label.clone(), site.live, css(*at)))
                .collect(),
            memory_strip: layout.memory.as_ref().map_or(0, |m| m.points.len()),
            stack_ticks: layout.lanes.iter().map(|l| l.stack_samples.len()).sum(),
            flame: self.scene.flame.as_ref().map(|f| FlameHook {
                title: f.title.clone(),
                samples: f.samples,
                top: f.top.clone(),
                hottest: f.hottest.clone(),
                bars: (f.bars.iter().take(FLAME_HOOK_BARS))
                    .map(|b| (f.text(b).to_owned(), b.depth, b.x0, b.x1))
                    .collect(),
                at: self.flame_drawn.graph.map(css),
                hottest_at: self.flame_drawn.hottest.map(css),
                marked: f.marked.is_some(),
                marked_spans: f.marked_spans.len(),
                newest_unix_ms: f.newest_unix_ns.map(|ns| ns as f64 / 1e6),
            }),
        };
        // One object: the stream's fields beside the page's.
        let mut page = serde_json::to_value(&hook).unwrap_or(Value::Null);
        if let (Value::Object(page), Ok(Value::Object(stream))) =
            (&mut page, serde_json::from_str::<Value>(stream))
        {
            page.extend(stream);
        }
        page.to_string()
    }
}

/// The page's side of what [`Page::hook`] reports; the stream's side is
/// the worker's (`source`'s hook).
#[derive(Serialize)]
struct Hook {
    /// The page's clock (ms since it was opened) when it was drawn.
    at_ms: f64,
    paused: bool,
    window: Option<Window>,
    frames_drawn: u64,
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
    /// The page's clock (ms since it was opened) when the first spans
    /// were drawn.
    first_drawn_ms: Option<f64>,
    /// Latency marks drawn: (Unix ns when recorded, the page's clock in
    /// ms when first drawn).
    latency_marks: Vec<(u64, f64)>,
    pause_button: Option<[f32; 4]>,
    timeline: Option<[f32; 4]>,
    /// A capture's triggers drawn: each label, and its x in the timeline.
    triggers: Vec<(String, f32)>,
    /// The log panel, once the stream sent a line.
    log: Option<LogHook>,
    /// The memory panel's sites: label, live bytes, and where drawn.
    sites_listed: Vec<(String, u64, [f32; 4])>,
    /// Points of the memory strip drawn.
    memory_strip: usize,
    /// Stack samples ticked on the lanes' CPU strips (one a pixel).
    stack_ticks: usize,
    /// The flame graph, where stacks were sampled.
    flame: Option<FlameHook>,
}

/// The flame graph, as [`Page::hook`] reports it.
#[derive(Serialize)]
struct FlameHook {
    title: String,
    samples: u64,
    /// The functions that ran most: text, own and total samples, frame.
    top: Vec<(String, u64, u64, Frame)>,
    /// The program's function that ran most, its share, and the frame.
    hottest: Option<(String, f64, Frame)>,
    /// Where the hottest function is written (a link: it outlines its
    /// spans).
    hottest_at: Option<[f32; 4]>,
    /// Its first bars: text, depth, and edges as shares of its width.
    bars: Vec<(String, u16, f32, f32)>,
    /// Where it was drawn.
    at: Option<[f32; 4]>,
    /// A frame is marked, and the spans outlined for it.
    marked: bool,
    marked_spans: usize,
    /// When its newest sample was taken, ms since the Unix epoch.
    newest_unix_ms: Option<f64>,
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

fn css(r: Rect) -> [f32; 4] {
    [r.left(), r.top(), r.width(), r.height()]
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
    use crate::scene::Message;
    use crate::source::Source;
    use egui::{Event, MouseWheelUnit, Pos2, RawInput};
    use typhon_live_tests::nested_stream;

    /// A tab: the page and its worker, speaking in bytes as they do in a
    /// browser, on a 1000 × 600 screen.
    struct Tab {
        page: Page,
        source: Source,
        ctx: Context,
    }

    impl Tab {
        /// A tab that was sent `stream`.
        fn new(stream: &[u8]) -> Tab {
            let mut source = Source::new(64 << 20);
            source.connected("test".into());
            source.take(stream, Duration::ZERO, None);
            Tab {
                page: Page::new(),
                source,
                ctx: Context::default(),
            }
        }

        /// One frame of the page at `now`, with `events`, then its ask
        /// answered.
        fn frame(&mut self, now: Duration, events: Vec<Event>) {
            let input = RawInput {
                screen_rect: Some(Rect::from_min_size(Pos2::ZERO, egui::vec2(1000.0, 600.0))),
                events,
                ..RawInput::default()
            };
            let page = &mut self.page;
            let _ = self.ctx.run(input, |ctx| page.ui(ctx, now));
            self.answer(now);
        }

        /// The page's ask, answered by the worker at `now`.
        fn answer(&mut self, now: Duration) {
            let ask = self.page.ask().expect("the last ask was answered");
            let ask = Ask::from_bytes(&ask.to_bytes()).unwrap();
            let scene = self.source.answer(ask, now).to_bytes();
            self.page.show(Scene::from_bytes(&scene).unwrap());
        }

        /// The test hook, both sides as of a frame drawn now.
        fn hook(&mut self) -> Value {
            self.page.hook();
            self.answer(Duration::ZERO);
            self.frame(Duration::ZERO, Vec::new());
            serde_json::from_str(&self.page.hook()).unwrap()
        }
    }

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
        let mut tab = Tab::new(&typhon_live_tests::task_stream());
        tab.frame(Duration::ZERO, Vec::new());
        let hook = tab.hook();
        assert_eq!(
            (&hook["task_bars"], &hook["task_polls"], &hook["task_rows"]),
            (&Value::from(1), &Value::from(2), &Value::from(1)),
            "{hook}"
        );
    }

    #[test]
    fn the_memory_panel_lists_the_growing_site_first_and_shows_its_stack() {
        let mut tab = Tab::new(&typhon_live_tests::memory_stream());
        tab.page.actions.push(Action::Zoom {
            factor: 100.0,
            at: 1.0,
        });
        tab.frame(Duration::ZERO, Vec::new());
        tab.frame(Duration::ZERO, Vec::new());
        let hook = tab.hook();
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
        let mut tab = Tab::new(&typhon_live_tests::text_stream());
        for _ in 0..3 {
            tab.frame(Duration::ZERO, Vec::new());
        }
        let log = tab.hook()["log"].clone();
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
        // The level chosen on the page reaches the worker's search.
        tab.page.log_level = Some(Level::Warn);
        tab.page.actions.push(Action::Log {
            text: String::new(),
            min_level: Some(Level::Warn as u8),
        });
        tab.frame(Duration::ZERO, Vec::new());
        assert_eq!(tab.hook()["log"]["matched"], 1);
        // A line's moment, shown paused in the middle of the window.
        tab.page.actions.push(Action::ShowTime(10_000_000_000));
        tab.frame(Duration::ZERO, Vec::new());
        let hook = tab.hook();
        let window = &hook["window"];
        let (start, end) = (window["start"].as_u64(), window["end"].as_u64());
        assert_eq!(hook["paused"], true, "{hook}");
        assert_eq!(
            start.zip(end).map(|(s, e)| s + (e - s) / 2),
            Some(10_000_000_000)
        );
    }

    #[test]
    fn a_latency_mark_is_recorded_once_when_first_drawn() {
        let mut tab = Tab::new(&latency_stream(1_700_000_000_123_456_789));
        for at in [10, 20, 30, 40] {
            tab.frame(Duration::from_millis(at), vec![]);
        }
        // The first frame had no scene yet; the second drew the mark.
        let marks = tab.hook()["latency_marks"].clone();
        assert_eq!(
            marks,
            serde_json::json!([[1_700_000_000_123_456_789u64, 20.0]]),
            "{marks}"
        );
    }

    #[test]
    fn a_capture_opens_paused_on_its_trigger() {
        let mut tab = Tab::new(&typhon_live_tests::capture_stream());
        tab.source.file_ended(Duration::ZERO);
        tab.frame(Duration::ZERO, vec![]);
        tab.frame(Duration::ZERO, vec![]);
        let hook = tab.hook();
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
        let mut tab = Tab::new(&nested_stream(0..300));
        tab.frame(Duration::ZERO, vec![]);
        tab.frame(Duration::ZERO, vec![]);
        let state = tab.hook();
        assert!(state["bars"].as_u64() > Some(0), "{state}");
        let [x, y, w, h] = [0, 1, 2, 3].map(|i| state["timeline"][i].as_f64().unwrap() as f32);
        tab.page.actions.push(Action::TogglePause);
        tab.frame(Duration::ZERO, vec![]);
        let before = tab.hook()["window"].clone();
        // A quarter of the way across, the wheel turned away (zoom in).
        let at = Pos2::new(x + w / 4.0, y + h / 2.0);
        tab.frame(Duration::ZERO, vec![Event::PointerMoved(at)]);
        let wheel = Event::MouseWheel {
            unit: MouseWheelUnit::Point,
            delta: egui::vec2(0.0, 300.0),
            modifiers: egui::Modifiers::NONE,
        };
        tab.frame(Duration::ZERO, vec![wheel]);
        tab.frame(Duration::ZERO, vec![]);
        let after = tab.hook()["window"].clone();
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

    #[test]
    fn the_names_listed_are_the_ones_the_search_finds() {
        let mut tab = Tab::new(&nested_stream(0..300));
        tab.frame(Duration::ZERO, vec![]);
        tab.frame(Duration::ZERO, vec![]);
        let listed = |tab: &mut Tab| -> Vec<String> {
            let hook = tab.hook();
            (hook["listed"].as_array().into_iter().flatten())
                .map(|row| row[0].as_str().unwrap_or_default().to_owned())
                .collect()
        };
        let mut all = listed(&mut tab);
        all.sort();
        assert_eq!(all, ["inner", "outer"]);
        tab.page.search = "INN".into();
        tab.page.actions.push(Action::Search("INN".into()));
        tab.frame(Duration::ZERO, vec![]);
        assert_eq!(listed(&mut tab), ["inner"], "ignoring case");
    }

    #[test]
    fn hovering_a_span_shows_its_self_time_found_by_the_worker() {
        let mut tab = Tab::new(&nested_stream(0..300));
        tab.frame(Duration::ZERO, vec![]);
        tab.frame(Duration::ZERO, vec![]);
        let span = (tab.page.scene.layout.lanes.iter())
            .flat_map(|lane| &lane.bars)
            .find_map(|bar| match bar.kind {
                BarKind::Span(span) => Some(span),
                _ => None,
            })
            .expect("a span drawn");
        tab.page.hover = Hover::of(&BarKind::Span(span));
        tab.answer(Duration::ZERO);
        let found = tab
            .page
            .scene
            .hovered
            .expect("the worker answered the hover");
        assert_eq!(found.hover.span, Some(span));
        let own = found.self_ns.expect("an ended span's self time");
        assert!(own <= span.duration, "{own} of {}", span.duration);
    }
}
