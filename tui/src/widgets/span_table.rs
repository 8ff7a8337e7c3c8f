//! The span names over the history, most total time first, with the
//! selected one highlighted and the filter in the title. "idle ms" is
//! the time task spans waited between their polls (0 for other spans).

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Borders, Row, Table, Widget};

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
                Row::new(vec![
                    s.name.clone(),
                    s.count.to_string(),
                    format!("{:.2}", s.total_ms),
                    format!("{:.2}", s.self_ms),
                    format!("{:.2}", s.idle_ms),
                    format!("{:.2}", s.max_ms),
                ])
                .style(style)
            });
        Widget::render(
            Table::new(
                rows,
                [
                    Constraint::Min(12),
                    Constraint::Length(8),
                    Constraint::Length(10),
                    Constraint::Length(10),
                    Constraint::Length(10),
                    Constraint::Length(9),
                ],
            )
            .header(
                Row::new(vec![
                    "span", "count", "total ms", "self ms", "idle ms", "max ms",
                ])
                .style(Style::default().add_modifier(Modifier::BOLD)),
            )
            .block(block),
            area,
            buf,
        );
    }
}
