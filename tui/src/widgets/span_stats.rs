//! One span name's statistics over the history (Tracy's Find Zone):
//! count, total, self time, mean, exact percentiles, the longest and the
//! tick it happened in, the bytes its spans allocated, its share of CPU, its fields (a string field's most frequent values
//! with their spans' percentiles, a numeric field's percentiles), and a
//! histogram of the durations.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Sparkline, Widget};

use typhon_live_model::allocated::allocated_line;
use typhon_live_model::stats::Distribution;
use typhon_live_model::{FieldSummary, NameCpu};

/// The statistics of one span name.
pub struct SpanDetail<'a> {
    /// The name.
    pub name: &'a str,
    /// Its distribution over the history.
    pub distribution: &'a Distribution,
    /// Host ticks per second, for milliseconds.
    pub ticks_per_second: u64,
    /// The tick its longest span happened in, if one holds it.
    pub max_tick: Option<u64>,
    /// Its fields.
    pub fields: &'a [FieldSummary],
    /// Its share of CPU, where samples cover its spans.
    pub cpu: Option<&'a NameCpu>,
}

impl SpanDetail<'_> {
    fn ms(&self, ticks: u64) -> String {
        format!(
            "{:.3}",
            ticks as f64 * 1e3 / self.ticks_per_second.max(1) as f64
        )
    }

    /// One line a field: `by KEY (N values): VALUE COUNT p50 P p99 P · …`
    /// or `KEY: p50 P  p99 P  max M (N)`.
    fn field_line(&self, field: &FieldSummary) -> Line<'static> {
        if let Some(n) = &field.numbers {
            return Line::from(format!(
                "{}: p50 {}  p99 {}  max {} ({})  {} .. {} {}",
                field.key,
                n.p50,
                n.p99,
                n.max,
                n.count,
                n.min,
                n.max,
                bars(&n.histogram, FIELD_BARS)
            ));
        }
        let groups: Vec<String> = (field.groups.iter())
            .map(|g| {
                let d = &g.durations;
                format!(
                    "{} {} p50 {} p99 {}",
                    g.value,
                    d.count,
                    self.ms(d.p50),
                    self.ms(d.p99)
                )
            })
            .collect();
        Line::from(format!(
            "by {} ({} values): {}",
            field.key,
            field.values,
            groups.join(" · ")
        ))
    }
}

/// Characters a numeric field's histogram takes.
const FIELD_BARS: usize = 16;

/// `counts` as at most `width` bars of block characters, neighbouring
/// counts summed, the tallest a full block (an empty count a space).
fn bars(counts: &[u64], width: usize) -> String {
    const LEVELS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let per = counts.len().div_ceil(width.max(1)).max(1);
    let summed: Vec<u64> = counts.chunks(per).map(|c| c.iter().sum()).collect();
    let most = summed.iter().copied().max().unwrap_or(0).max(1);
    (summed.iter())
        .map(|&n| match n {
            0 => LEVELS[0],
            // At least the lowest bar for a count that is there.
            n => LEVELS[((n * 8).div_ceil(most) as usize).clamp(1, 8)],
        })
        .collect()
}

impl Widget for &SpanDetail<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let block = Block::default()
            .borders(Borders::ALL)
            .title(format!(" {} over the history (ms) ", self.name));
        let inner = block.inner(area);
        block.render(area, buf);
        let d = self.distribution;
        if d.count == 0 {
            Paragraph::new("no span of this name in the history").render(inner, buf);
            return;
        }
        let at = self
            .max_tick
            .map_or(String::new(), |t| format!(" in tick {t} (m)"));
        let mut lines = vec![
            Line::from(format!(
                "count {}  total {}  self {}  mean {:.3}",
                d.count,
                self.ms(d.total),
                self.ms(d.self_time),
                d.mean * 1e3 / self.ticks_per_second.max(1) as f64
            )),
            Line::from(format!(
                "p50 {}  p90 {}  p99 {}  max {}{at}",
                self.ms(d.p50),
                self.ms(d.p90),
                self.ms(d.p99),
                self.ms(d.max)
            )),
        ];
        lines.extend(allocated_line(d.allocated, d.count).map(Line::from));
        if let Some(cpu) = self.cpu {
            lines.extend(cpu.lines(self.name).map(Line::from));
        }
        lines.extend(self.fields.iter().map(|f| self.field_line(f)));
        lines.push(Line::from(format!(
            "histogram {} .. {} (log)",
            self.ms(d.min),
            self.ms(d.max)
        )));
        let text_rows = lines.len() as u16;
        Paragraph::new(lines).render(inner, buf);
        if inner.height > text_rows {
            let chart = Rect {
                y: inner.y + text_rows,
                height: inner.height - text_rows,
                ..inner
            };
            Sparkline::default()
                .data(&d.histogram)
                .style(Style::default().fg(Color::Cyan))
                .render(chart, buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use typhon_live_model::history::SpanRecord;
    use typhon_live_model::CpuShare;

    #[test]
    fn a_known_distribution_shows_its_exact_percentiles() {
        // 1..=1000 µs.
        let mut durations: Vec<u64> = (1..=1000).collect();
        let d = Distribution::of(&mut durations, 400_000, 77);
        let share = CpuShare {
            covered: 1_000_000,
            on_cpu: 900_000,
            waiting: Some(100_000),
            voluntary: Some(0),
            involuntary: Some(3),
            exact: false,
        };
        let longest = SpanRecord {
            start: 0,
            duration: 1_000_000,
            arg: 0,
            id: 1,
            parent: 0,
            name: 1,
            lane: 0,
            has_arg: false,
            poll: false,
        };
        let cpu = NameCpu {
            all: share,
            longest: (longest, share),
        };
        let detail = SpanDetail {
            name: "Physics",
            distribution: &d,
            ticks_per_second: 1_000_000,
            max_tick: Some(12),
            fields: &[],
            cpu: Some(&cpu),
        };
        let area = Rect::new(0, 0, 110, 10);
        let mut buf = Buffer::empty(area);
        (&detail).render(area, &mut buf);
        let text = crate::testing::buffer_text(&buf);
        assert!(text.contains("Physics over the history"), "{text}");
        assert!(
            text.contains("CPU, from samples: 90 % on CPU, 10 % waiting for a core, 0 % off-CPU"),
            "{text}"
        );
        assert!(
            text.contains("longest: Physics: 1.0 ms, of which 0.9 ms on CPU, 0.1 ms waiting"),
            "{text}"
        );
        assert!(
            text.contains("count 1000  total 500.500  self 400.000  mean 0.500"),
            "{text}"
        );
        assert!(
            text.contains("p50 0.500  p90 0.900  p99 0.990  max 1.000 in tick 12 (m)"),
            "{text}"
        );
        assert!(text.contains("histogram 0.001 .. 1.000 (log)"), "{text}");
        // Log buckets: most of 1..1000 in the last ones, the tallest bar.
        assert_eq!(buf[(32, 6)].symbol(), "█", "{text}");
        assert_eq!(buf[(1, 6)].symbol(), " ", "{text}");
    }

    #[test]
    fn the_bytes_its_spans_allocated_are_said() {
        let mut durations: Vec<u64> = (1..=10).collect();
        let mut d = Distribution::of(&mut durations, 0, 0);
        d.allocated = 5 << 19;
        let detail = SpanDetail {
            name: "Load",
            distribution: &d,
            ticks_per_second: 1_000_000,
            max_tick: None,
            fields: &[],
            cpu: None,
        };
        let area = Rect::new(0, 0, 80, 8);
        let mut buf = Buffer::empty(area);
        (&detail).render(area, &mut buf);
        let text = crate::testing::buffer_text(&buf);
        assert!(
            text.contains("allocated 2.5 MiB (self), 256.0 KiB a span"),
            "{text}"
        );
    }

    #[test]
    fn fields_show_by_value_and_as_numbers() {
        use typhon_live_model::FieldGroup;
        let mut durations: Vec<u64> = (1..=1000).collect();
        let d = Distribution::of(&mut durations, 0, 0);
        let mut fast: Vec<u64> = vec![100; 600];
        let mut slow: Vec<u64> = vec![2_000; 400];
        let mut rows: Vec<u64> = (1..=100).collect();
        let fields = [
            FieldSummary {
                key: "route".into(),
                groups: vec![
                    FieldGroup {
                        value: "/a".into(),
                        durations: Distribution::of(&mut fast, 0, 0),
                    },
                    FieldGroup {
                        value: "/b".into(),
                        durations: Distribution::of(&mut slow, 0, 0),
                    },
                ],
                values: 2,
                numbers: None,
            },
            FieldSummary {
                key: "rows".into(),
                groups: Vec::new(),
                values: 0,
                numbers: Some(Distribution::of(&mut rows, 0, 0)),
            },
        ];
        let detail = SpanDetail {
            name: "request",
            distribution: &d,
            ticks_per_second: 1_000_000,
            max_tick: None,
            fields: &fields,
            cpu: None,
        };
        let area = Rect::new(0, 0, 100, 8);
        let mut buf = Buffer::empty(area);
        (&detail).render(area, &mut buf);
        let text = crate::testing::buffer_text(&buf);
        assert!(
            text.contains(
                "by route (2 values): /a 600 p50 0.100 p99 0.100 · /b 400 p50 2.000 p99 2.000"
            ),
            "{text}"
        );
        assert!(
            text.contains("rows: p50 50  p99 99  max 100 (100)  1 .. 100 "),
            "{text}"
        );
    }

    #[test]
    fn a_histogram_is_bars_of_its_summed_counts() {
        assert_eq!(bars(&[0, 1, 2, 8], 4), " ▁▂█");
        assert_eq!(bars(&[1, 1, 0, 0, 4, 4], 3), "▂ █");
        assert_eq!(bars(&[], 4), "");
    }
}
