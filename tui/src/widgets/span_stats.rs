//! One span name's statistics over the history (Tracy's Find Zone):
//! count, total, self time, mean, exact percentiles, the longest and the
//! tick it happened in, and a histogram of the durations.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Sparkline, Widget};

use typhon_live_model::stats::Distribution;

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
}

impl SpanDetail<'_> {
    fn ms(&self, ticks: u64) -> String {
        format!(
            "{:.3}",
            ticks as f64 * 1e3 / self.ticks_per_second.max(1) as f64
        )
    }
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
        let lines = vec![
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
            Line::from(format!(
                "histogram {} .. {} (log)",
                self.ms(d.min),
                self.ms(d.max)
            )),
        ];
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

    #[test]
    fn a_known_distribution_shows_its_exact_percentiles() {
        // 1..=1000 µs.
        let mut durations: Vec<u64> = (1..=1000).collect();
        let d = Distribution::of(&mut durations, 400_000, 77);
        let detail = SpanDetail {
            name: "Physics",
            distribution: &d,
            ticks_per_second: 1_000_000,
            max_tick: Some(12),
        };
        let area = Rect::new(0, 0, 70, 8);
        let mut buf = Buffer::empty(area);
        (&detail).render(area, &mut buf);
        let text = crate::testing::buffer_text(&buf);
        assert!(text.contains("Physics over the history"), "{text}");
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
}
