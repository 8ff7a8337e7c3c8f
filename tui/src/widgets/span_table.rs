//! The span names over the history, most total time first, with the
//! selected one highlighted and the filter in the title. "idle ms" is
//! the time task spans waited between their polls (0 for other spans);
//! "alloc", shown when any span allocated, the bytes they allocated
//! themselves (FORMAT.md, "Allocated bytes").

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Borders, Row, Table, Widget};

use typhon_live_model::memory::bytes;
use typhon_live_model::SpanStats;

/// The list of span names.
pub struct SpanTable<'a> {
    /// The rows, filtered.
    pub rows: &'a [&'a SpanStats],
    /// The selected row.
    pub selected: Option<usize>,
    /// The filter, and whether keys type into it.
    pub filter: &'a str,
    /// See `filter`.
    pub filtering: bool,
}

impl Widget for &SpanTable<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let title = match (self.filtering, self.filter.is_empty()) {
            (true, _) => format!(" spans over the history, filter: {}_ ", self.filter),
            (false, false) => format!(" spans over the history matching {:?} ", self.filter),
            (false, true) => " spans over the history ".to_owned(),
        };
        let block = Block::default().borders(Borders::ALL).title(title);
        // Rows that fit under the header, scrolled to keep the selection.
        let fit = block.inner(area).height.saturating_sub(1) as usize;
        let first = self.selected.map_or(0, |s| (s + 1).saturating_sub(fit));
        let allocated = self.rows.iter().any(|s| s.allocated_bytes > 0);
        let rows = self
            .rows
            .iter()
            .enumerate()
            .skip(first)
            .take(fit)
            .map(|(i, s)| {
                let style = if Some(i) == self.selected {
                    Style::default().add_modifier(Modifier::REVERSED)
                } else {
                    Style::default()
                };
                let mut cells = vec![
                    s.name.clone(),
                    s.count.to_string(),
                    format!("{:.2}", s.total_ms),
                    format!("{:.2}", s.self_ms),
                    format!("{:.2}", s.idle_ms),
                    format!("{:.2}", s.max_ms),
                ];
                if allocated {
                    cells.push(bytes(s.allocated_bytes as f64));
                }
                Row::new(cells).style(style)
            });
        let mut widths = vec![
            Constraint::Min(12),
            Constraint::Length(8),
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(9),
        ];
        let mut header = vec!["span", "count", "total ms", "self ms", "idle ms", "max ms"];
        if allocated {
            widths.push(Constraint::Length(10));
            header.push("alloc");
        }
        Widget::render(
            Table::new(rows, widths)
                .header(Row::new(header).style(Style::default().add_modifier(Modifier::BOLD)))
                .block(block),
            area,
            buf,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(name: &str, allocated_bytes: u64) -> SpanStats {
        SpanStats {
            id: 0,
            name: name.to_owned(),
            count: 4,
            total_ms: 2.0,
            self_ms: 1.0,
            busy_ms: 2.0,
            idle_ms: 0.0,
            mean_ms: 0.5,
            max_ms: 1.0,
            allocated_bytes,
            p50_ms: None,
            p90_ms: None,
            p99_ms: None,
            cpu: None,
        }
    }

    fn text(rows: &[&SpanStats]) -> String {
        let table = SpanTable {
            rows,
            selected: None,
            filter: "",
            filtering: false,
        };
        let area = Rect::new(0, 0, 90, 5);
        let mut buf = Buffer::empty(area);
        (&table).render(area, &mut buf);
        crate::testing::buffer_text(&buf)
    }

    #[test]
    fn the_bytes_column_is_shown_once_a_span_allocated() {
        let (load, tick) = (stats("Load", 3 << 20), stats("Tick", 0));
        let shown = text(&[&load, &tick]);
        assert!(shown.contains("alloc"), "{shown}");
        assert!(shown.contains("3.0 MiB"), "{shown}");
        assert!(shown.contains("0 B"), "{shown}");
        let tick_only = text(&[&tick]);
        assert!(!tick_only.contains("alloc"), "{tick_only}");
    }
}
