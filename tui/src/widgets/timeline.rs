//! The timeline: per lane (main first), the spans of a window of host time
//! as bars at their depth, names inside where they fit, tick starts on a
//! ruler with overrunning ticks in red, instants as markers, and spans
//! still open drawn up to "now" in a warning style, so a live stall
//! stands out. Above the lanes, under the heading "tasks", the task spans
//! (spans that crossed an `.await`) packed in rows by the model
//! ([`task_tracks`]): each from its creation to its close, dim where it
//! waited, in its colour where its polls ran.
//!
//! Under a lane whose thread is sampled, a strip says how it spent each
//! column's time: green on a CPU, yellow waiting for one, grey off it
//! (asleep, blocked), blended where a column holds some of each.
//!
//! A span arrives when it ends, after its children, so its depth is not
//! in the stream: the reader's [`Nesting`] gives it, for the visible
//! spans only (by parent; by time where a parent was lost; a parent still
//! open takes its place in the lane's open stack). A span narrower than a
//! cell is folded into a `·` mark.

use std::sync::Arc;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::Widget;
use typhon_live_core::OpenSpan;
use typhon_live_reader::{Names, Nesting};

use typhon_live_model::cpu::{CpuCell, CpuIndex};
use typhon_live_model::history::{Chunk, SpanRecord};
use typhon_live_model::{task_tracks, OpenTask, TaskBar, TimelineInputs, Trigger};

/// Columns of the lane labels.
const LABEL: u16 = 14;
/// Rows one lane takes at most.
const MAX_DEPTH_ROWS: usize = 6;
/// Rows the task tracks take at most.
const MAX_TASK_ROWS: usize = 4;
/// What is still open: a live stall stands out.
const OPEN: Style = Style::new()
    .fg(Color::White)
    .bg(Color::Red)
    .add_modifier(Modifier::BOLD);
/// Bar colours, picked by name id.
const COLOURS: [Color; 6] = [
    Color::Blue,
    Color::Green,
    Color::Cyan,
    Color::Magenta,
    Color::LightBlue,
    Color::LightGreen,
];

/// A lane as the timeline draws it.
pub struct TimelineLane<'a> {
    /// Its slot.
    pub id: u16,
    /// Its label.
    pub name: &'a str,
    /// Spans open on it, outermost first.
    pub open: &'a [OpenSpan],
}

/// The lanes of `inputs`, as the timeline takes them.
pub fn lanes_of(inputs: &TimelineInputs) -> Vec<TimelineLane<'_>> {
    inputs
        .lanes
        .iter()
        .map(|(id, name, open)| TimelineLane {
            id: *id,
            name,
            open,
        })
        .collect()
}

/// The timeline of `[start, end)` of host time.
pub struct Timeline<'a> {
    /// Where the records are, oldest first.
    pub chunks: &'a [Arc<Chunk>],
    /// The lanes, in drawing order.
    pub lanes: &'a [TimelineLane<'a>],
    /// Span names by id.
    pub names: &'a Names,
    /// The window.
    pub start: u64,
    /// See `start`.
    pub end: u64,
    /// Host time now: open spans are drawn up to it.
    pub now: u64,
    /// Task spans begun and not ended.
    pub open_tasks: &'a [(u64, OpenTask)],
    /// A capture's triggers, marked on the ruler.
    pub triggers: &'a [Trigger],
}

/// A span placed on the timeline.
struct Bar {
    start: u64,
    end: u64,
    depth: usize,
    name: u32,
    open: bool,
}

impl Timeline<'_> {
    /// Column of host time `t` within `plot` (may lie outside it).
    fn column(&self, plot: Rect, t: u64) -> i64 {
        let width = self.end.saturating_sub(self.start).max(1) as f64;
        let offset = ((t as f64 - self.start as f64) * plot.width as f64 / width).floor();
        // Far outside (a hostile time): clamped, the cast saturates.
        (plot.x as i64).saturating_add(offset as i64)
    }

    /// The visible spans of `lane`, with their depths. A chunk narrower
    /// than a column of `plot`, whose spans are all that short too, is one
    /// folded mark: zoomed out over a long history, a draw reads the
    /// chunks, not every span.
    fn bars(&self, lane: &TimelineLane<'_>, plot: Rect) -> Vec<Bar> {
        let column = self.end.saturating_sub(self.start) / u64::from(plot.width.max(1));
        let visible = |s: &SpanRecord| {
            s.lane == lane.id
                && s.start < self.end
                && s.start.saturating_add(s.duration) >= self.start
        };
        let mut folded = Vec::new();
        let mut spans: Vec<&SpanRecord> = Vec::new();
        for chunk in self
            .chunks
            .iter()
            .filter(|c| c.last >= self.start && c.earliest_start < self.end)
        {
            let narrow = chunk.last.saturating_sub(chunk.first) < column && chunk.longest < column;
            if narrow {
                if chunk.lanes.contains(&lane.id) && chunk.first < self.end {
                    folded.push(Bar {
                        start: chunk.first,
                        end: chunk.first,
                        depth: 0,
                        name: 0,
                        open: false,
                    });
                }
                continue;
            }
            spans.extend(chunk.spans.iter().filter(|s| visible(s)));
        }
        // Newest first, as the reader's nesting takes them.
        let mut nesting = Nesting::with_open(lane.open);
        let mut bars: Vec<Bar> = spans
            .iter()
            .rev()
            .map(|s| {
                let end = s.start.saturating_add(s.duration);
                Bar {
                    start: s.start,
                    end,
                    depth: nesting.depth(s.id, s.parent, s.start, end),
                    name: s.name,
                    open: false,
                }
            })
            .collect();
        bars.extend(folded);
        for (depth, open) in lane.open.iter().enumerate() {
            if open.start < self.end && self.now >= self.start {
                bars.push(Bar {
                    start: open.start,
                    end: self.now.max(open.start),
                    depth,
                    name: open.name,
                    open: true,
                });
            }
        }
        bars
    }
}

impl Widget for &Timeline<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width <= LABEL + 2 || area.height < 2 {
            return;
        }
        let plot = Rect {
            x: area.x + LABEL,
            y: area.y,
            width: area.width - LABEL,
            height: area.height,
        };
        self.render_ruler(plot, buf);
        let mut y = area.y + 1;
        y += self.render_tasks(area, plot, y, buf);
        let lanes_left = |y: u16| area.bottom().saturating_sub(y) as usize;
        let in_window = self.chunks.iter().filter(|c| c.last >= self.start);
        let cpu = CpuIndex::of(in_window.map(|c| &**c));
        for (i, lane) in self.lanes.iter().enumerate() {
            if y >= area.bottom() {
                break;
            }
            let bars = self.bars(lane, plot);
            let deepest = bars.iter().map(|b| b.depth).max().unwrap_or(0);
            // Rows for this lane: its depth, but leave one for each lane
            // after it.
            let rest = self.lanes.len() - i - 1;
            let strip = cpu.strip(lane.id, (self.start, self.end), usize::from(plot.width));
            // The strip takes a row only where the lane has one to spare.
            let strip = strip.filter(|_| lanes_left(y) > rest + 1);
            let rows = (deepest + 1).min(MAX_DEPTH_ROWS).min(
                lanes_left(y)
                    .saturating_sub(rest + usize::from(strip.is_some()))
                    .max(1),
            );
            buf.set_stringn(
                area.x,
                y,
                lane.name,
                (LABEL - 1) as usize,
                Style::default().add_modifier(Modifier::BOLD),
            );
            for bar in bars.iter().filter(|b| b.depth < rows) {
                self.render_bar(plot, y + bar.depth as u16, bar, buf);
            }
            self.render_instants(plot, y, lane.id, buf);
            y += rows as u16;
            if let Some(cells) = strip {
                render_strip(area.x, plot, y, &cells, buf);
                y += 1;
            }
        }
    }
}

impl Timeline<'_> {
    /// Tick starts, numbered where the number fits inside its tick;
    /// overrunning ticks red.
    fn render_ruler(&self, plot: Rect, buf: &mut Buffer) {
        let ticks = self
            .chunks
            .iter()
            .flat_map(|c| c.ticks.iter())
            .filter(|t| t.end >= self.start && t.start < self.end);
        for tick in ticks {
            let (x0, x1) = (self.column(plot, tick.start), self.column(plot, tick.end));
            let style = if tick.overrun {
                Style::default().fg(Color::White).bg(Color::Red)
            } else {
                Style::default().fg(Color::DarkGray)
            };
            if tick.overrun {
                for x in x0.max(plot.x as i64)..x1.min(plot.right() as i64) {
                    buf[(x as u16, plot.y)].set_style(style);
                }
            }
            if (plot.x as i64..plot.right() as i64).contains(&x0) {
                buf[(x0 as u16, plot.y)].set_char('┃').set_style(style);
                let label = format!("{}", tick.tick);
                let room = (x1.min(plot.right() as i64) - x0 - 1).max(0) as usize;
                if label.len() < room {
                    buf.set_string(x0 as u16 + 1, plot.y, &label, style);
                }
            }
        }
        // Where a capture's triggers fired, over the ticks.
        let style = Style::default().fg(Color::White).bg(Color::Magenta);
        for trigger in self.triggers {
            let x = self.column(plot, trigger.time);
            if (plot.x as i64..plot.right() as i64).contains(&x) {
                buf[(x as u16, plot.y)].set_char('▼').set_style(style);
            }
        }
    }

    fn render_bar(&self, plot: Rect, y: u16, bar: &Bar, buf: &mut Buffer) {
        let x0 = self.column(plot, bar.start).max(plot.x as i64);
        let x1 = self.column(plot, bar.end).min(plot.right() as i64);
        if x1 <= x0 {
            // Narrower than a cell: folded into a mark.
            if (plot.x as i64..plot.right() as i64).contains(&x0) {
                let cell = &mut buf[(x0 as u16, y)];
                if cell.symbol() == " " {
                    cell.set_char('·');
                }
            }
            return;
        }
        let style = if bar.open {
            OPEN
        } else {
            Style::default()
                .fg(Color::Black)
                .bg(COLOURS[bar.name as usize % COLOURS.len()])
        };
        self.render_named(y, (x0, x1), bar.name, bar.open, style, buf);
    }

    /// Cells `x0..x1` of row `y` in `style`, named inside where the name
    /// fits, "(open)" after it for what is still open.
    fn render_named(
        &self,
        y: u16,
        (x0, x1): (i64, i64),
        name: u32,
        open: bool,
        style: Style,
        buf: &mut Buffer,
    ) {
        for x in x0..x1 {
            buf[(x as u16, y)].set_char(' ').set_style(style);
        }
        let name = self.names.get(name).unwrap_or("");
        let label = if open {
            format!("{name} (open)")
        } else {
            name.to_owned()
        };
        let room = (x1 - x0) as usize;
        if room >= 2 {
            buf.set_stringn(x0 as u16, y, &label, room, style);
        }
    }

    /// The task tracks from row `y`, leaving a row for each lane; the
    /// rows they took.
    fn render_tasks(&self, area: Rect, plot: Rect, y: u16, buf: &mut Buffer) -> u16 {
        let room = (area.bottom().saturating_sub(y) as usize).saturating_sub(self.lanes.len());
        let max_rows = MAX_TASK_ROWS.min(room);
        if max_rows == 0 {
            return 0;
        }
        let tracks = task_tracks(
            self.chunks,
            self.open_tasks,
            (self.start, self.end),
            self.now,
            max_rows,
        );
        if tracks.rows == 0 {
            return 0;
        }
        let heading = Style::default().add_modifier(Modifier::BOLD);
        buf.set_stringn(area.x, y, "tasks", (LABEL - 1) as usize, heading);
        if tracks.hidden > 0 {
            let more = format!("+{} more", tracks.hidden);
            let last = y + tracks.rows as u16 - 1;
            let row = if tracks.rows > 1 { last } else { y };
            let at = if tracks.rows > 1 { area.x } else { area.x + 6 };
            buf.set_stringn(
                at,
                row,
                &more,
                (LABEL - 1) as usize,
                Style::default().fg(Color::DarkGray),
            );
        }
        for bar in &tracks.bars {
            self.render_task(plot, y + bar.row as u16, bar, buf);
        }
        for poll in &tracks.polls {
            let bar_colour = tracks
                .bars
                .iter()
                .find(|b| b.row == poll.row && b.start <= poll.start && poll.start <= b.end)
                .map_or(COLOURS[0], |b| COLOURS[b.name as usize % COLOURS.len()]);
            let x0 = self.column(plot, poll.start).max(plot.x as i64);
            let x1 = self
                .column(plot, poll.end)
                .min(plot.right() as i64)
                .max(x0 + 1);
            for x in x0..x1.min(plot.right() as i64) {
                buf[(x as u16, y + poll.row as u16)].set_bg(bar_colour);
            }
        }
        tracks.rows as u16
    }

    /// A task span: dim from its creation to its close, its name inside.
    fn render_task(&self, plot: Rect, y: u16, bar: &TaskBar, buf: &mut Buffer) {
        let x0 = self.column(plot, bar.start).max(plot.x as i64);
        let x1 = self
            .column(plot, bar.end)
            .min(plot.right() as i64)
            .max(x0 + 1);
        if x0 >= plot.right() as i64 {
            return;
        }
        let style = if bar.open {
            OPEN
        } else {
            Style::default().fg(Color::White).bg(Color::DarkGray)
        };
        self.render_named(y, (x0, x1), bar.name, bar.open, style, buf);
    }

    fn render_instants(&self, plot: Rect, y: u16, lane: u16, buf: &mut Buffer) {
        let instants = self
            .chunks
            .iter()
            .filter(|c| c.last >= self.start && c.first < self.end)
            .flat_map(|c| c.instants.iter())
            .filter(|i| i.lane == lane && i.time >= self.start && i.time < self.end);
        for instant in instants {
            let x = self.column(plot, instant.time);
            // On blank cells only: a span's name stays readable.
            if (plot.x as i64..plot.right() as i64).contains(&x)
                && buf[(x as u16, y)].symbol() == " "
            {
                buf[(x as u16, y)]
                    .set_char('◆')
                    .set_style(Style::default().fg(Color::Yellow));
            }
        }
    }
}

/// A lane's CPU strip on row `y`: a thin bar per column in the colour
/// of how its time was spent, "cpu" in the label column.
fn render_strip(label_x: u16, plot: Rect, y: u16, cells: &[Option<CpuCell>], buf: &mut Buffer) {
    let dim = Style::default().fg(Color::DarkGray);
    buf.set_stringn(label_x + 1, y, "cpu", (LABEL - 2) as usize, dim);
    for (x, cell) in (plot.x..plot.right()).zip(cells) {
        if let Some(cell) = cell {
            buf[(x, y)].set_char('▂').set_style(Style::default().fg({
                let [r, g, b] = cell.rgb();
                Color::Rgb(r, g, b)
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use typhon_live_model::history::{InstantRecord, TickRecord};

    fn names_of(names: &[(u32, &str)]) -> Names {
        let mut table = Names::new();
        for &(id, text) in names {
            table.define(id, text);
        }
        table
    }

    fn span(id: u32, parent: u32, name: u32, start: u64, end: u64) -> SpanRecord {
        SpanRecord {
            start,
            duration: end - start,
            arg: 0,
            id,
            parent,
            name,
            lane: 0,
            has_arg: false,
            poll: false,
        }
    }

    /// `chunk`'s timeline of host time 0..1 000, now at its end, for
    /// `lanes`: five rows, `columns` of plot.
    fn render(chunk: Chunk, names: &Names, lanes: &[TimelineLane<'_>], columns: u16) -> Buffer {
        let chunks = [Arc::new(chunk)];
        let timeline = Timeline {
            chunks: &chunks,
            lanes,
            names,
            start: 0,
            end: 1_000,
            now: 1_000,
            open_tasks: &[],
            triggers: &[],
        };
        let area = Rect::new(0, 0, LABEL + columns, 5);
        let mut buf = Buffer::empty(area);
        (&timeline).render(area, &mut buf);
        buf
    }

    /// The symbols of each row of `buf`.
    fn rows(buf: &Buffer) -> Vec<String> {
        crate::testing::buffer_text(buf)
            .lines()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn a_sampled_lane_has_a_cpu_strip_in_the_colour_of_its_time() {
        use typhon_live_core::Counters;
        use typhon_live_reader::CpuInterval;
        let mut chunk = Chunk::default();
        chunk.push_span(span(1, 0, 0, 0, 1_000), 1_000);
        // 0..500 on a CPU, 500..750 asleep; nothing sampled after.
        for (from, to, on) in [(0, 500, 500), (500, 750, 0)] {
            chunk.push_cpu(CpuInterval {
                lane: 0,
                thread: 9,
                from,
                to,
                spent: Counters {
                    on_cpu_ns: Some(on),
                    waiting_ns: Some(0),
                    voluntary: Some(1),
                    involuntary: Some(0),
                    ..Counters::default()
                },
                switches_traced: false,
            });
        }
        let names = names_of(&[(0, "Sim.AI")]);
        let lanes = [
            TimelineLane {
                id: 0,
                name: "Sim",
                open: &[],
            },
            TimelineLane {
                id: 1,
                name: "unsampled",
                open: &[],
            },
        ];
        let buf = render(chunk, &names, &lanes, 20);
        let rows = rows(&buf);
        assert!(rows[1].starts_with("Sim "));
        // The strip under it: 15 columns sampled, 5 not.
        assert_eq!(
            rows[2],
            format!(
                " cpu{}{}{}",
                " ".repeat(LABEL as usize - 4),
                "▂".repeat(15),
                " ".repeat(5)
            )
        );
        assert_eq!(buf[(LABEL, 2)].fg, Color::Rgb(60, 200, 80));
        assert_eq!(buf[(LABEL + 12, 2)].fg, Color::Rgb(90, 90, 90));
        // A lane without samples has none.
        assert!(rows[3].starts_with("unsampled"));
        assert_eq!(rows[4].trim(), "");
    }

    #[test]
    fn spans_sit_at_their_depth_and_columns_and_an_open_one_runs_to_now() {
        let mut chunk = Chunk::default();
        // Children end first, as they arrive.
        chunk.push_span(span(3, 2, 1, 100, 300), 200);
        chunk.push_span(span(4, 2, 2, 400, 700), 300);
        chunk.push_span(span(2, 0, 0, 0, 800), 300);
        // Narrower than a cell: folded.
        chunk.push_span(span(5, 0, 3, 900, 905), 5);
        chunk.push_tick(TickRecord {
            tick: 7,
            start: 0,
            end: 850,
            overrun: true,
        });
        chunk.push_instant(InstantRecord {
            time: 960,
            payload: 0,
            name: 3,
            lane: 0,
        });
        let names = names_of(&[
            (0, "outer"),
            (1, "sense"),
            (2, "control"),
            (3, "x"),
            (9, "stall"),
        ]);
        let open = [OpenSpan {
            id: 1,
            name: 9,
            start: 500,
        }];
        let lanes = [
            TimelineLane {
                id: 0,
                name: "main",
                open: &[],
            },
            TimelineLane {
                id: 1,
                name: "worker",
                open: &open,
            },
        ];
        // 50 columns of plot: 20 host ticks a column.
        let buf = render(chunk, &names, &lanes, 50);
        let rows = rows(&buf);
        let plot = |row: usize| rows[row][LABEL as usize..].to_owned();
        assert_eq!(plot(0).trim_end(), "┃7");
        assert!(rows[1].starts_with("main"));
        // outer: 0..800 is columns 0..40; x folded at 45; the instant at 48.
        assert_eq!(plot(1), format!("outer{}·  ◆ ", " ".repeat(40)));
        // sense 100..300 (5..15), control 400..700 (20..35), one level down.
        assert_eq!(
            plot(2).trim_end(),
            format!("     sense{}control", " ".repeat(10))
        );
        // The open span from 500 (column 25) to now.
        assert!(rows[3].starts_with("worker"));
        assert_eq!(
            plot(3),
            format!("{}stall (open){}", " ".repeat(25), " ".repeat(13))
        );
        // Styles: the overrunning tick is red on the ruler, the open span
        // red, a closed span coloured by name.
        assert_eq!(buf[(LABEL + 10, 0)].bg, Color::Red);
        assert_eq!(buf[(LABEL + 30, 3)].bg, Color::Red);
        assert_eq!(buf[(LABEL + 10, 1)].bg, COLOURS[0]);
        assert_eq!(buf[(LABEL + 6, 2)].bg, COLOURS[1]);
    }

    #[test]
    fn hostile_spans_draw_clipped_and_never_panic() {
        let mut chunk = Chunk::default();
        // A parent cycle, a chain deeper than anything drawn, times at the
        // ends of the clock, a span of the whole clock.
        chunk.push_span(span(1, 2, 0, 10, 20), 0);
        chunk.push_span(span(2, 1, 0, 5, 30), 0);
        for id in 100..10_100 {
            chunk.push_span(span(id, id + 1, 1, 40, 50), 0);
        }
        chunk.push_span(span(20_000, 0, 2, u64::MAX - 5, u64::MAX), 0);
        chunk.push_span(span(20_001, 0, 2, 0, u64::MAX), 0);
        chunk.push_tick(TickRecord {
            tick: u64::MAX,
            start: u64::MAX - 1,
            end: 3,
            overrun: true,
        });
        let names = Names::new();
        let open = [OpenSpan {
            id: 7,
            name: 9,
            start: u64::MAX,
        }];
        let lanes = [TimelineLane {
            id: 0,
            name: "a lane whose name is far too long to fit",
            open: &open,
        }];
        let chunks = [Arc::new(chunk)];
        for (start, end) in [(0, 100), (0, u64::MAX), (u64::MAX - 10, u64::MAX), (50, 40)] {
            let timeline = Timeline {
                chunks: &chunks,
                lanes: &lanes,
                names: &names,
                start,
                end,
                now: u64::MAX,
                open_tasks: &[],
                triggers: &[],
            };
            for area in [
                Rect::new(0, 0, 60, 10),
                Rect::new(0, 0, 3, 1),
                Rect::new(5, 5, 40, 3),
            ] {
                let mut buf = Buffer::empty(Rect::new(0, 0, 80, 20));
                (&timeline).render(area, &mut buf);
            }
        }
    }

    #[test]
    fn zoomed_out_chunks_fold_and_long_spans_still_show() {
        // 200 chunks of 50 short spans (1 µs each, 2 µs apart), and in the
        // last one a long span covering them all.
        let mut chunks = Vec::new();
        for c in 0..200u64 {
            let mut chunk = Chunk::default();
            for i in 0..50u64 {
                let at = c * 100 + i * 2;
                chunk.push_span(span((c * 50 + i) as u32 + 1, 0, 1, at, at + 1), 1);
            }
            if c == 199 {
                chunk.push_span(span(100_000, 0, 0, 0, 19_990), 0);
            }
            chunks.push(Arc::new(chunk));
        }
        let names = names_of(&[(0, "Long"), (1, "short")]);
        let lanes = [TimelineLane {
            id: 0,
            name: "main",
            open: &[],
        }];
        let timeline = Timeline {
            chunks: &chunks,
            lanes: &lanes,
            names: &names,
            start: 0,
            end: 20_000,
            now: 20_000,
            open_tasks: &[],
            triggers: &[],
        };
        // 40 columns of 500 µs: every chunk (100 µs) is narrower than one.
        let area = Rect::new(0, 0, LABEL + 40, 3);
        let mut buf = Buffer::empty(area);
        (&timeline).render(area, &mut buf);
        let rows = rows(&buf);
        let plot = &rows[1][LABEL as usize..];
        assert!(plot.starts_with("Long"), "{plot:?}");
        // The long span covers row 1; its short neighbours fold into marks
        // where nothing else is drawn.
        let bar_cells = plot.chars().filter(|&c| c != ' ').count();
        assert!(bar_cells >= 4, "{plot:?}");
        assert_eq!(buf[(LABEL + 20, 1)].bg, COLOURS[0]);
    }

    #[test]
    fn a_span_whose_parent_was_lost_sits_inside_the_span_that_holds_it() {
        let mut chunk = Chunk::default();
        // Children end first: 3's parent 99 was lost; 2's parent is open.
        chunk.push_span(span(3, 99, 0, 100, 200), 100);
        chunk.push_span(span(1, 0, 0, 50, 400), 350);
        chunk.push_span(span(2, 5, 0, 500, 600), 100);
        let chunks = [Arc::new(chunk)];
        let open = [OpenSpan {
            id: 5,
            name: 0,
            start: 450,
        }];
        let names = names_of(&[]);
        let lane = TimelineLane {
            id: 0,
            name: "Main",
            open: &open,
        };
        let timeline = Timeline {
            chunks: &chunks,
            lanes: &[],
            names: &names,
            start: 0,
            end: 1_000,
            now: 1_000,
            open_tasks: &[],
            triggers: &[],
        };
        let mut depths: Vec<(u64, usize)> = timeline
            .bars(&lane, Rect::new(0, 0, 100, 5))
            .iter()
            .map(|b| (b.start, b.depth))
            .collect();
        depths.sort_unstable();
        assert_eq!(depths, [(50, 0), (100, 1), (450, 0), (500, 1)]);
    }

    #[test]
    fn task_spans_are_packed_under_their_heading_with_their_polls() {
        use typhon_live_model::history::TaskRecord;
        let mut chunk = Chunk::default();
        let task = |task, start, wall| TaskRecord {
            start,
            wall,
            busy: 100,
            task,
            name: 1,
            lane: 0,
        };
        chunk.push_task(task(1, 0, 500), 0);
        chunk.push_task(task(2, 200, 600), 0);
        let mut poll = span(7, 0, 1, 400, 500);
        (poll.poll, poll.arg) = (true, 2);
        chunk.push_span(poll, 100);
        let open = [(
            3,
            OpenTask {
                name: 2,
                start: 600,
                ..OpenTask::default()
            },
        )];
        let names = names_of(&[(1, "GET /a"), (2, "GET /b")]);
        let lanes = [TimelineLane {
            id: 0,
            name: "worker",
            open: &[],
        }];
        let chunks = [Arc::new(chunk)];
        let timeline = Timeline {
            chunks: &chunks,
            lanes: &lanes,
            names: &names,
            start: 0,
            end: 1_000,
            now: 1_000,
            open_tasks: &open,
            triggers: &[],
        };
        // 50 columns of plot: 20 host ticks a column.
        let area = Rect::new(0, 0, LABEL + 50, 4);
        let mut buf = Buffer::empty(area);
        (&timeline).render(area, &mut buf);
        let rows = rows(&buf);
        assert!(rows[1].starts_with("tasks"), "{rows:#?}");
        // Task 1 from column 0, task 3 (open) after it in the same row,
        // task 2 in the second row.
        assert_eq!(&rows[1][LABEL as usize..LABEL as usize + 6], "GET /a");
        assert_eq!(
            &rows[1][LABEL as usize + 30..LABEL as usize + 43],
            "GET /b (open)"
        );
        assert_eq!(&rows[2][LABEL as usize + 10..LABEL as usize + 16], "GET /a");
        assert!(rows[3].starts_with("worker"));
        // Waiting is dim; the poll (400..500, columns 20 to 24) in colour.
        let dim = buf[(LABEL + 12, 2)].bg;
        assert_eq!(dim, Color::DarkGray);
        assert_eq!(buf[(LABEL + 21, 2)].bg, COLOURS[1]);
        assert_eq!(buf[(LABEL + 31, 1)].bg, Color::Red);
    }
}
