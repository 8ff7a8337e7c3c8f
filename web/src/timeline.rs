//! The timeline of one window: laid out from the model's inputs
//! ([`lay_out`], pure, in pixels across), then painted ([`paint`]).
//!
//! A span's depth is not on the wire (spans arrive whole, children
//! first). Read backwards, a lane's spans come outermost first, which is
//! how the reader's [`Nesting`] takes them: by parent, by time where a
//! parent was lost, seeded with the spans still open; one pass a lane.
//! Only the visible window is read: chunks ending before it stop the
//! pass; a chunk narrower than a pixel whose longest span is too is one
//! mark per lane, its spans not read; spans narrower than a pixel fold
//! into one bar with their count (Tracy's folding).
//!
//! Under a lane whose thread is sampled, a thin strip: how it spent each
//! couple of pixels' time, on a CPU, waiting for one, or off it; and a
//! tick on it where its stack was sampled.
//!
//! Above the lanes, under the heading "tasks", the task spans (spans
//! that crossed an `.await`) as the model packs them in rows
//! ([`task_tracks`]): each from its creation to its close, dim where it
//! waited, in its colour where its polls ran.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use egui::{Align2, Color32, FontId, Painter, Pos2, Rect, Stroke, StrokeKind};
use typhon_live_core::OpenSpan;
use typhon_live_model::cpu::{CpuCell, CpuIndex};
use typhon_live_model::history::{InstantRecord, SpanRecord, TickRecord};
use typhon_live_model::marks::{Mark, MarkKind};
use typhon_live_model::Trigger;
use typhon_live_model::{task_tracks, TaskTracks, TimelineInputs};
use typhon_live_reader::Nesting;

use crate::view::Window;

/// Narrower than this many pixels, spans fold.
const MIN_BAR: f32 = 1.0;
/// Height of one depth of a lane, and of the ruler.
pub const ROW: f32 = 18.0;
/// Height of a gauge's plot.
pub const GAUGE_ROW: f32 = 40.0;
/// Depths drawn at most per lane; deeper spans are drawn at the last.
const MAX_DEPTH: u16 = 32;
/// Rows the task tracks take at most.
const MAX_TASK_ROWS: usize = 8;

/// The core's open span (no serde there: the core has no such
/// dependency), as a [`Layout`] crosses from the worker to the page.
#[derive(Serialize, Deserialize)]
#[serde(remote = "OpenSpan")]
struct OpenSpanFields {
    id: u32,
    name: u32,
    start: u64,
}

/// What a bar stands for.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum BarKind {
    /// A span that ended.
    Span(SpanRecord),
    /// A span still open as of the last Catch-up: it grows until it ends.
    Open(#[serde(with = "OpenSpanFields")] OpenSpan),
    /// Spans too narrow to draw one by one, and how many.
    Folded(u32),
}

/// One bar, in pixels from the timeline's left edge.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bar {
    /// Its left and right edges.
    pub x0: f32,
    /// See `x0`.
    pub x1: f32,
    /// Its depth: 0 for a root.
    pub depth: u16,
    /// What it is.
    pub kind: BarKind,
}

/// A lane's part of the picture.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LaneRows {
    /// Its slot, and its name.
    pub id: u16,
    /// See `id`.
    pub name: String,
    /// Depths it uses (at least one row).
    pub depths: u16,
    /// Its bars, latest first.
    pub bars: Vec<Bar>,
    /// Its instants, at their x.
    pub instants: Vec<(f32, InstantRecord)>,
    /// Its CPU strip, a cell every [`STRIP_CELL`] pixels, where its
    /// thread is sampled in the window.
    pub cpu: Option<Vec<Option<CpuCell>>>,
    /// Where its stacks were sampled in the window: an x a pixel at most.
    pub stack_samples: Vec<f32>,
}

/// A gauge's readings in the window.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct GaugeRow {
    /// Its name id.
    pub name: u32,
    /// Readings at their x, left to right, one per half pixel at most.
    pub points: Vec<(f32, f64)>,
    /// The smallest and largest reading in the window.
    pub min: f64,
    /// See `min`.
    pub max: f64,
}

/// The picture of one window.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Layout {
    /// The window laid out, and its width in pixels.
    pub window: Option<Window>,
    /// See `window`.
    pub width: f32,
    /// Lanes, in the model's order.
    pub lanes: Vec<LaneRows>,
    /// Ticks that ended in the window: their edges and the record.
    pub ticks: Vec<(f32, f32, TickRecord)>,
    /// Gauges with readings in the window.
    pub gauges: Vec<GaugeRow>,
    /// The process's live bytes in the window, where the stream tells
    /// them: the memory strip, drawn above the gauges.
    pub memory: Option<GaugeRow>,
    /// Marks in the window, at their x.
    pub marks: Vec<(f32, Mark)>,
    /// A capture's triggers in the window, at their x.
    pub triggers: Vec<(f32, Trigger)>,
    /// The task spans in the window, packed in rows.
    pub tasks: TaskTracks,
    /// Spans read to lay it out, and bars made.
    pub spans_read: usize,
    /// See `spans_read`.
    pub bars: usize,
}

/// Lays out `window` of `inputs` across `width` pixels.
pub fn lay_out(inputs: &TimelineInputs, window: Window, width: f32) -> Layout {
    let scale = width as f64 / window.len().max(1) as f64;
    let x = |t: u64| ((t as f64 - window.start as f64) * scale) as f32;
    let mut layout = Layout {
        window: Some(window),
        width,
        tasks: task_tracks(
            &inputs.chunks,
            &inputs.open_tasks,
            (window.start, window.end),
            inputs.now,
            MAX_TASK_ROWS,
        ),
        ..Layout::default()
    };
    let mut row_of: HashMap<u16, usize> = HashMap::new();
    // Per lane: its spans' nesting (read newest first), and per depth the
    // last folded bar.
    let mut stacks: Vec<Nesting> = Vec::new();
    let mut folds: Vec<Vec<Option<usize>>> = Vec::new();
    let in_window = inputs.chunks.iter().filter(|c| c.last >= window.start);
    let cpu = CpuIndex::of(in_window.map(|c| &**c));
    for (id, name, open) in &inputs.lanes {
        row_of.insert(*id, layout.lanes.len());
        let mut lane = LaneRows {
            id: *id,
            name: name.clone(),
            depths: 1,
            cpu: cpu.strip(
                *id,
                (window.start, window.end),
                (width / STRIP_CELL).ceil() as usize,
            ),
            ..LaneRows::default()
        };
        for (depth, span) in open.iter().enumerate() {
            let depth = (depth as u16).min(MAX_DEPTH - 1);
            if span.start <= window.end {
                lane.bars.push(Bar {
                    x0: x(span.start).max(-1.0),
                    x1: x(inputs.now.max(span.start)).min(width + 1.0),
                    depth,
                    kind: BarKind::Open(*span),
                });
                lane.depths = lane.depths.max(depth + 1);
            }
        }
        layout.lanes.push(lane);
        stacks.push(Nesting::with_open(open));
        folds.push(Vec::new());
    }
    let mut gauges: HashMap<u32, usize> = HashMap::new();
    // Per lane: the pixels where its stacks were sampled, as bits.
    let mut sampled: Vec<Vec<u64>> = vec![Vec::new(); layout.lanes.len()];
    for chunk in inputs.chunks.iter().rev() {
        if chunk.last < window.start {
            // Every span after this ended before the window.
            break;
        }
        let overlaps = chunk.first <= window.end;
        if overlaps {
            for tick in chunk
                .ticks
                .iter()
                .filter(|t| t.end >= window.start && t.start <= window.end)
            {
                layout.ticks.push((x(tick.start), x(tick.end), *tick));
            }
            for instant in chunk
                .instants
                .iter()
                .filter(|i| (window.start..=window.end).contains(&i.time))
            {
                if let Some(&row) = row_of.get(&instant.lane) {
                    layout.lanes[row].instants.push((x(instant.time), *instant));
                }
            }
            for sample in chunk
                .stacks
                .iter()
                .filter(|s| (window.start..=window.end).contains(&s.time))
            {
                // One tick a pixel: a thread sampled at 1 kHz in a
                // second's window is a solid strip, not a thousand lines.
                let pixel = x(sample.time).max(0.0) as usize;
                if let Some(&row) = row_of.get(&sample.lane) {
                    let pixels = &mut sampled[row];
                    if pixels.len() <= pixel / 64 {
                        pixels.resize(pixel / 64 + 1, 0);
                    }
                    pixels[pixel / 64] |= 1 << (pixel % 64);
                }
            }
            for reading in chunk
                .memory
                .iter()
                .filter(|m| (window.start..=window.end).contains(&m.time))
            {
                let row = layout.memory.get_or_insert_with(|| GaugeRow {
                    name: u32::MAX,
                    min: f64::INFINITY,
                    max: f64::NEG_INFINITY,
                    ..GaugeRow::default()
                });
                let live = reading.live as f64;
                (row.min, row.max) = (row.min.min(live), row.max.max(live));
                row.points.push((x(reading.time), live));
            }
            for gauge in chunk
                .gauges
                .iter()
                .filter(|g| (window.start..=window.end).contains(&g.time))
            {
                let at = *gauges.entry(gauge.name).or_insert_with(|| {
                    layout.gauges.push(GaugeRow {
                        name: gauge.name,
                        min: f64::INFINITY,
                        max: f64::NEG_INFINITY,
                        ..GaugeRow::default()
                    });
                    layout.gauges.len() - 1
                });
                let row = &mut layout.gauges[at];
                row.min = row.min.min(gauge.value);
                row.max = row.max.max(gauge.value);
                row.points.push((x(gauge.time), gauge.value));
            }
        }
        if chunk.earliest_start > window.end || chunk.spans.is_empty() {
            continue;
        }
        let narrow = |length: u64| (length as f64 * scale) < f64::from(MIN_BAR);
        if narrow(chunk.last.saturating_sub(chunk.first)) && narrow(chunk.longest) {
            if overlaps {
                for lane in &chunk.lanes {
                    if let Some(&row) = row_of.get(lane) {
                        let (x0, x1) = (x(chunk.first), x(chunk.last));
                        fold(&mut layout.lanes[row], &mut folds[row], 0, x0, x1, 1);
                    }
                }
            }
            continue;
        }
        for span in chunk.spans.iter().rev() {
            layout.spans_read += 1;
            let end = span.start.saturating_add(span.duration);
            if end < window.start || span.start > window.end {
                continue;
            }
            let Some(&row) = row_of.get(&span.lane) else {
                continue;
            };
            let depth = stacks[row].depth(span.id, span.parent, span.start, end);
            let depth = (depth.min(usize::from(MAX_DEPTH - 1))) as u16;
            let lane = &mut layout.lanes[row];
            lane.depths = lane.depths.max(depth + 1);
            let (x0, x1) = (x(span.start), x(end));
            if x1 - x0 < MIN_BAR {
                fold(lane, &mut folds[row], depth, x0, x1, 1);
            } else {
                lane.bars.push(Bar {
                    x0: x0.max(-1.0),
                    x1: x1.min(width + 1.0),
                    depth,
                    kind: BarKind::Span(*span),
                });
            }
        }
    }
    for gauge in layout.gauges.iter_mut().chain(layout.memory.as_mut()) {
        // Read chunk by chunk, newest first, each chunk's oldest first:
        // put left to right, then thin to one reading per half pixel.
        gauge.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut last = f32::NEG_INFINITY;
        gauge.points.retain(|&(x, _)| {
            let keep = x - last >= 0.5;
            if keep {
                last = x;
            }
            keep
        });
    }
    for (lane, pixels) in layout.lanes.iter_mut().zip(&sampled) {
        for (word, &bits) in pixels.iter().enumerate() {
            let set = (0..64).filter(|bit| bits & (1 << bit) != 0);
            lane.stack_samples
                .extend(set.map(|bit| (word * 64 + bit) as f32));
        }
    }
    layout.gauges.sort_by_key(|g| g.name);
    layout.marks = inputs
        .marks
        .iter()
        .filter(|m| (window.start..=window.end).contains(&m.time))
        .map(|m| (x(m.time), *m))
        .collect();
    layout.triggers = inputs
        .triggers
        .iter()
        .filter(|t| (window.start..=window.end).contains(&t.time))
        .map(|t| (x(t.time), *t))
        .collect();
    layout.bars = layout.lanes.iter().map(|l| l.bars.len()).sum();
    layout
}

/// Adds spans `x0..x1` at `depth` to the lane's folded bar there, if the
/// last one reaches them, else starts one.
fn fold(lane: &mut LaneRows, folds: &mut Vec<Option<usize>>, depth: u16, x0: f32, x1: f32, n: u32) {
    let d = usize::from(depth);
    if folds.len() <= d {
        folds.resize(d + 1, None);
    }
    if let Some(at) = folds[d] {
        let bar = &mut lane.bars[at];
        if x1 >= bar.x0 - MIN_BAR {
            bar.x0 = bar.x0.min(x0);
            bar.x1 = bar.x1.max(x1);
            if let BarKind::Folded(count) = &mut bar.kind {
                *count = count.saturating_add(n);
            }
            return;
        }
    }
    folds[d] = Some(lane.bars.len());
    lane.depths = lane.depths.max(depth + 1);
    lane.bars.push(Bar {
        x0,
        x1: x1.max(x0 + MIN_BAR),
        depth,
        kind: BarKind::Folded(n),
    });
}

/// Where things are on screen, for the pointer: each lane's top and
/// bottom, and the gauges'.
#[derive(Clone, Debug, Default)]
pub struct Geometry {
    /// The timeline's rectangle (the ruler at its top).
    pub rect: Option<Rect>,
    /// Per lane (as in the layout): its rows' top and bottom.
    pub lanes: Vec<(f32, f32)>,
}

impl Geometry {
    /// The bar under `pos`, if any: the lane and the bar's index.
    pub fn bar_at<'a>(&self, layout: &'a Layout, pos: Pos2) -> Option<(&'a LaneRows, &'a Bar)> {
        let rect = self.rect?;
        let (row, &(top, _)) = self
            .lanes
            .iter()
            .enumerate()
            .find(|(_, (top, bottom))| (*top..*bottom).contains(&pos.y))?;
        let lane = layout.lanes.get(row)?;
        let depth = ((pos.y - top - LANE_LABEL) / ROW).floor();
        if depth < 0.0 {
            return None;
        }
        let x = pos.x - rect.left();
        lane.bars
            .iter()
            .filter(|b| f32::from(b.depth) == depth)
            .find(|b| (b.x0 - 0.5..=b.x1 + 0.5).contains(&x))
            .map(|bar| (lane, bar))
    }
}

/// Height of a lane's name above its rows.
const LANE_LABEL: f32 = 14.0;
/// A CPU strip's height under a lane's rows, and its cells' width.
pub const STRIP: f32 = 6.0;
/// See `STRIP`.
pub const STRIP_CELL: f32 = 2.0;

/// How a span name is told apart: a colour of its own, stable across
/// frames and pages.
pub fn colour_of(name: u32) -> Color32 {
    let h = name.wrapping_mul(2_654_435_761) >> 16;
    let hue = (h % 360) as f32 / 360.0;
    egui::ecolor::Hsva::new(hue, 0.45, 0.75, 1.0).into()
}

/// Orange for what is still open.
pub const OPEN: Color32 = Color32::from_rgb(0xff, 0x8c, 0x00);
/// Red for overruns and losses.
pub const ALARM: Color32 = Color32::from_rgb(0xe0, 0x30, 0x30);
/// The memory strip's line.
pub const MEMORY: Color32 = Color32::from_rgb(0xc0, 0x70, 0xff);

/// What painting needs besides the layout.
pub struct Style<'a> {
    /// A span's name by id.
    pub name: &'a dyn Fn(u32) -> String,
    /// Whether a name stands out (selected, or found by the search); all
    /// others are dimmed while any does.
    pub highlight: &'a dyn Fn(u32) -> bool,
    /// Whether anything is highlighted.
    pub any_highlight: bool,
    /// Whether a span is outlined: its samples ran the flame graph's
    /// marked frame.
    pub marked: &'a dyn Fn(&SpanRecord) -> bool,
}

/// Paints the task tracks from `top`; returns their bottom.
fn paint_tasks(painter: &Painter, rect: Rect, top: f32, layout: &Layout, style: &Style<'_>) -> f32 {
    let (left, font) = (rect.left(), FontId::proportional(11.0));
    let tasks = &layout.tasks;
    let x = |t: u64| match layout.window {
        Some(window) => {
            let scale = layout.width as f64 / window.len().max(1) as f64;
            ((t as f64 - window.start as f64) * scale) as f32
        }
        None => 0.0,
    };
    painter.line_segment(
        [Pos2::new(left, top), Pos2::new(rect.right(), top)],
        Stroke::new(1.0, Color32::from_gray(50)),
    );
    let heading = match tasks.hidden {
        0 => "tasks".to_owned(),
        n => format!("tasks ({n} more overlap, not drawn)"),
    };
    painter.text(
        Pos2::new(left + 4.0, top + 1.0),
        Align2::LEFT_TOP,
        heading,
        font.clone(),
        Color32::from_gray(170),
    );
    let row_top = |row: usize| top + LANE_LABEL + row as f32 * ROW;
    let bar_rect = |row: usize, x0: f32, x1: f32| {
        Rect::from_min_max(
            Pos2::new(left + x0.max(-1.0), row_top(row)),
            Pos2::new(
                left + x1.min(layout.width + 1.0).max(x0 + MIN_BAR),
                row_top(row) + ROW - 2.0,
            ),
        )
    };
    for bar in &tasks.bars {
        let r = bar_rect(bar.row, x(bar.start), x(bar.end));
        let dim = style.any_highlight && !(style.highlight)(bar.name);
        let fill = colour_of(bar.name).gamma_multiply(if dim { 0.1 } else { 0.35 });
        painter.rect_filled(r, 1.0, fill);
        if bar.open {
            painter.rect_stroke(r, 1.0, Stroke::new(1.5, OPEN), StrokeKind::Inside);
        }
    }
    for poll in &tasks.polls {
        let r = bar_rect(poll.row, x(poll.start), x(poll.end));
        let name = tasks
            .bars
            .iter()
            .find(|b| b.row == poll.row && b.start <= poll.start && poll.start <= b.end)
            .map_or(0, |b| b.name);
        painter.rect_filled(r, 0.0, colour_of(name));
    }
    for bar in &tasks.bars {
        let r = bar_rect(bar.row, x(bar.start), x(bar.end));
        if r.width() > 24.0 {
            let label = if bar.open {
                format!("{} (open)", (style.name)(bar.name))
            } else {
                format!(
                    "{} {}",
                    (style.name)(bar.name),
                    duration(bar.end - bar.start)
                )
            };
            let visible = r.intersect(rect);
            painter.with_clip_rect(visible).text(
                Pos2::new(visible.left() + 3.0, r.center().y),
                Align2::LEFT_CENTER,
                label,
                font.clone(),
                Color32::from_gray(235),
            );
        }
    }
    row_top(tasks.rows)
}

/// Paints `layout` into `rect`; returns where each lane went.
pub fn paint(painter: &Painter, rect: Rect, layout: &Layout, style: &Style<'_>) -> Geometry {
    let painter = painter.with_clip_rect(rect);
    let left = rect.left();
    let font = FontId::proportional(11.0);
    let text = Color32::from_gray(230);
    painter.rect_filled(rect, 0.0, Color32::from_gray(24));
    // The ruler: ticks as alternating bands, overruns in red.
    let ruler = Rect::from_min_max(rect.min, Pos2::new(rect.right(), rect.top() + ROW));
    for (x0, x1, tick) in &layout.ticks {
        let band = Rect::from_min_max(
            Pos2::new(left + x0.max(-1.0), ruler.top()),
            Pos2::new(
                left + x1.min(layout.width + 1.0).max(x0 + 1.0),
                ruler.bottom(),
            ),
        );
        let fill = if tick.overrun {
            ALARM
        } else if tick.tick % 2 == 0 {
            Color32::from_gray(60)
        } else {
            Color32::from_gray(80)
        };
        painter.rect_filled(band, 0.0, fill);
        if band.width() > 70.0 {
            let label = format!("#{} {}", tick.tick, duration(tick.duration()));
            painter.text(
                band.left_center() + egui::vec2(3.0, 0.0),
                Align2::LEFT_CENTER,
                label,
                font.clone(),
                text,
            );
        }
    }
    let mut geometry = Geometry {
        rect: Some(rect),
        lanes: Vec::with_capacity(layout.lanes.len()),
    };
    let mut y = ruler.bottom() + 2.0;
    if layout.tasks.rows > 0 {
        y = paint_tasks(&painter, rect, y, layout, style) + 2.0;
    }
    for lane in &layout.lanes {
        let top = y;
        let rows_bottom = top + LANE_LABEL + f32::from(lane.depths) * ROW;
        let bottom = rows_bottom + if lane.cpu.is_some() { STRIP + 1.0 } else { 0.0 };
        painter.line_segment(
            [Pos2::new(left, top), Pos2::new(rect.right(), top)],
            Stroke::new(1.0, Color32::from_gray(50)),
        );
        painter.text(
            Pos2::new(left + 4.0, top + 1.0),
            Align2::LEFT_TOP,
            &lane.name,
            font.clone(),
            Color32::from_gray(170),
        );
        for bar in &lane.bars {
            let y0 = top + LANE_LABEL + f32::from(bar.depth) * ROW;
            let r = Rect::from_min_max(
                Pos2::new(left + bar.x0, y0),
                Pos2::new(left + bar.x1, y0 + ROW - 2.0),
            );
            let (fill, name) = match bar.kind {
                BarKind::Span(span) => (colour_of(span.name), Some(span.name)),
                BarKind::Open(span) => (OPEN, Some(span.name)),
                BarKind::Folded(_) => (Color32::from_gray(120), None),
            };
            let dim = style.any_highlight && !name.is_some_and(|n| (style.highlight)(n));
            let fill = if dim { fill.gamma_multiply(0.3) } else { fill };
            painter.rect_filled(r, 1.0, fill);
            if let BarKind::Open(_) = bar.kind {
                painter.rect_stroke(r, 1.0, Stroke::new(1.5, ALARM), StrokeKind::Inside);
            }
            if matches!(bar.kind, BarKind::Span(span) if (style.marked)(&span)) {
                painter.rect_stroke(
                    r,
                    1.0,
                    Stroke::new(2.0, Color32::WHITE),
                    StrokeKind::Outside,
                );
            }
            if r.width() > 24.0 {
                let label = match (bar.kind, name) {
                    (BarKind::Folded(n), _) => format!("{n} spans"),
                    (_, Some(name)) => (style.name)(name),
                    _ => String::new(),
                };
                let visible = r.intersect(rect);
                painter.with_clip_rect(visible).text(
                    Pos2::new(visible.left() + 3.0, r.center().y),
                    Align2::LEFT_CENTER,
                    label,
                    font.clone(),
                    Color32::BLACK,
                );
            }
        }
        for (x, instant) in &lane.instants {
            let at = Pos2::new(left + x, top + LANE_LABEL);
            painter.add(egui::Shape::convex_polygon(
                vec![at + egui::vec2(-4.0, -6.0), at + egui::vec2(4.0, -6.0), at],
                colour_of(instant.name),
                Stroke::new(1.0, Color32::WHITE),
            ));
        }
        for (at, cell) in lane.cpu.iter().flatten().enumerate() {
            let Some(cell) = cell else { continue };
            let x0 = left + at as f32 * STRIP_CELL;
            let r = Rect::from_min_max(
                Pos2::new(x0, rows_bottom),
                Pos2::new(x0 + STRIP_CELL, rows_bottom + STRIP),
            );
            let [r8, g8, b8] = cell.rgb();
            painter.rect_filled(r, 0.0, Color32::from_rgb(r8, g8, b8));
        }
        // Where its stacks were sampled: a tick on the strip each.
        for x in &lane.stack_samples {
            painter.line_segment(
                [
                    Pos2::new(left + x, rows_bottom),
                    Pos2::new(left + x, rows_bottom + STRIP),
                ],
                Stroke::new(1.0, Color32::from_gray(235)),
            );
        }
        geometry.lanes.push((top, bottom));
        y = bottom + 2.0;
    }
    let memory = layout
        .memory
        .iter()
        .map(|m| (m, "memory live".to_owned(), MEMORY));
    let gauges = (layout.gauges.iter()).map(|g| (g, (style.name)(g.name), colour_of(g.name)));
    for (gauge, label, colour) in memory.chain(gauges) {
        let top = y;
        let plot = Rect::from_min_max(
            Pos2::new(left, top + LANE_LABEL),
            Pos2::new(rect.right(), top + LANE_LABEL + GAUGE_ROW),
        );
        painter.line_segment(
            [Pos2::new(left, top), Pos2::new(rect.right(), top)],
            Stroke::new(1.0, Color32::from_gray(50)),
        );
        let last = gauge.points.last().map_or(0.0, |p| p.1);
        painter.text(
            Pos2::new(left + 4.0, top + 1.0),
            Align2::LEFT_TOP,
            format!(
                "{} {}  ({} .. {})",
                label,
                number(last),
                number(gauge.min),
                number(gauge.max)
            ),
            font.clone(),
            Color32::from_gray(170),
        );
        let range = (gauge.max - gauge.min).max(f64::EPSILON);
        let points: Vec<Pos2> = gauge
            .points
            .iter()
            .map(|&(x, v)| {
                Pos2::new(
                    left + x,
                    plot.bottom() - ((v - gauge.min) / range) as f32 * plot.height(),
                )
            })
            .collect();
        painter.add(egui::Shape::line(points, Stroke::new(1.5, colour)));
        y = plot.bottom() + 4.0;
    }
    // Marks over everything: a line down the timeline, and what it says.
    for (x, mark) in &layout.marks {
        let colour = match mark.kind {
            MarkKind::Restart | MarkKind::Reconnect => Color32::from_rgb(0x60, 0xa0, 0xff),
            _ => ALARM,
        };
        let at = left + x;
        painter.line_segment(
            [Pos2::new(at, ruler.top()), Pos2::new(at, y)],
            Stroke::new(1.5, colour),
        );
        painter.text(
            Pos2::new(at + 2.0, ruler.bottom() + 1.0),
            Align2::LEFT_TOP,
            mark_text(mark),
            font.clone(),
            colour,
        );
    }
    // A capture's triggers: a magenta line and what fired, by its label.
    let magenta = Color32::from_rgb(0xe0, 0x40, 0xe0);
    for (x, trigger) in &layout.triggers {
        let at = left + x;
        painter.line_segment(
            [Pos2::new(at, ruler.top()), Pos2::new(at, y)],
            Stroke::new(2.0, magenta),
        );
        // Under the ruler, where a tick's own label does not cover it.
        painter.text(
            Pos2::new(at + 3.0, ruler.bottom() + 14.0),
            Align2::LEFT_TOP,
            format!("trigger: {}", (style.name)(trigger.label)),
            font.clone(),
            magenta,
        );
    }
    geometry
}

/// What a mark says on the timeline.
pub fn mark_text(mark: &Mark) -> String {
    match mark.kind {
        MarkKind::Gap => format!("{} frames lost", mark.count),
        MarkKind::Dropped => format!("{} events dropped", mark.count),
        MarkKind::Damaged => format!("damage ({} events)", mark.count),
        MarkKind::Restart => "restart".into(),
        MarkKind::Reconnect => "reconnect".into(),
    }
}

/// `ns` for a person: ns, µs, ms or s.
pub fn duration(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => format!("{:.1} µs", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.2} ms", ns as f64 / 1e6),
        _ => format!("{:.3} s", ns as f64 / 1e9),
    }
}

fn number(v: f64) -> String {
    match v.abs() {
        a if a >= 1e9 => format!("{:.2} G", v / 1e9),
        a if a >= 1e6 => format!("{:.2} M", v / 1e6),
        a if a >= 1e3 => format!("{:.1} k", v / 1e3),
        _ => format!("{v:.1}"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use typhon_live_core::Counters;
    use typhon_live_model::history::Chunk;
    use typhon_live_reader::CpuInterval;

    use super::*;

    #[test]
    fn a_sampled_lane_gets_a_cpu_strip_and_an_unsampled_one_none() {
        let mut chunk = Chunk::default();
        // Lane 0: 0..50 on a CPU, 50..100 asleep.
        for (from, on) in [(0, 50), (50, 0)] {
            chunk.push_cpu(CpuInterval {
                lane: 0,
                thread: 3,
                from,
                to: from + 50,
                spent: Counters {
                    on_cpu_ns: Some(on),
                    waiting_ns: Some(0),
                    voluntary: Some(0),
                    involuntary: Some(0),
                    ..Counters::default()
                },
                switches_traced: false,
            });
        }
        let inputs = TimelineInputs {
            chunks: vec![Arc::new(chunk)],
            lanes: vec![
                (0, "Sim".into(), Vec::new()),
                (1, "idle".into(), Vec::new()),
            ],
            now: 100,
            ticks_per_second: 1_000_000_000,
            marks: Vec::new(),
            open_tasks: Vec::new(),
            triggers: Vec::new(),
        };
        let layout = lay_out(&inputs, Window { start: 0, end: 100 }, 20.0);
        // 20 px: ten cells of 2 px, five running then five asleep.
        let cells = layout.lanes[0].cpu.as_ref().expect("a strip");
        let on: Vec<f32> = cells.iter().map(|c| c.map_or(-1.0, |c| c.on_cpu)).collect();
        assert_eq!(on, [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(cells[0].unwrap().rgb(), [60, 200, 80]);
        assert_eq!(cells[9].unwrap().rgb(), [90, 90, 90]);
        assert!(layout.lanes[1].cpu.is_none());
    }

    /// As the terminal draws them (the same spans in its timeline's
    /// test): by parent, by time where a parent was lost.
    #[test]
    fn a_span_whose_parent_was_lost_sits_inside_the_span_that_holds_it() {
        let mut chunk = Chunk::default();
        let span = |id, parent, start: u64, end: u64| SpanRecord {
            start,
            duration: end - start,
            arg: 0,
            id,
            parent,
            name: 0,
            lane: 0,
            has_arg: false,
            poll: false,
        };
        chunk.push_span(span(3, 99, 100, 200), 100);
        chunk.push_span(span(1, 0, 50, 400), 350);
        chunk.push_span(span(2, 5, 500, 600), 100);
        let open = OpenSpan {
            id: 5,
            name: 0,
            start: 450,
        };
        let inputs = TimelineInputs {
            chunks: vec![Arc::new(chunk)],
            lanes: vec![(0, "Main".into(), vec![open])],
            now: 1_000,
            ticks_per_second: 1_000_000_000,
            marks: Vec::new(),
            open_tasks: Vec::new(),
            triggers: Vec::new(),
        };
        let layout = lay_out(
            &inputs,
            Window {
                start: 0,
                end: 1_000,
            },
            1_000.0,
        );
        let mut depths: Vec<(u64, u16)> = (layout.lanes[0].bars.iter())
            .map(|bar| match bar.kind {
                BarKind::Span(span) => (span.start, bar.depth),
                BarKind::Open(open) => (open.start, bar.depth),
                _ => (u64::MAX, bar.depth),
            })
            .collect();
        depths.sort_unstable();
        assert_eq!(depths, [(50, 0), (100, 1), (450, 0), (500, 1)]);
    }
}
