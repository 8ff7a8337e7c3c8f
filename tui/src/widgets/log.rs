//! The log: the latest lines the search keeps, up to where the view is
//! (the live edge, or where it is paused), each with its time, level,
//! lane and text, coloured by level. The search and the counts are in
//! the title.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use typhon_live_model::LogRow;

/// The log pane.
pub struct LogPane<'a> {
    /// The rows to show, oldest first (the last ones fit).
    pub rows: &'a [LogRow],
    /// The search, whether keys type into it, and the least level shown.
    pub search: &'a str,
    /// See `search`.
    pub typing: bool,
    /// See `search` (`all`, or a level's name).
    pub min_level: &'a str,
    /// Lines matching, lines kept, lines the stream lost, lines that left
    /// the budget.
    pub matched: usize,
    /// See `matched`.
    pub kept: usize,
    /// See `matched`.
    pub lost: u64,
    /// See `matched`.
    pub evicted: u64,
}

fn level_style(level: &str) -> Style {
    match level {
        "ERROR" => Style::default().fg(Color::Red),
        "WARN" => Style::default().fg(Color::Yellow),
        "INFO" => Style::default().fg(Color::Green),
        _ => Style::default().fg(Color::DarkGray),
    }
}

impl Widget for &LogPane<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let search = match (self.typing, self.search.is_empty()) {
            (true, _) => format!(", search: {}_", self.search),
            (false, false) => format!(" matching {:?}", self.search),
            (false, true) => String::new(),
        };
        let level = match self.min_level {
            "all" => String::new(),
            level => format!(", {level} and above"),
        };
        let mut title = format!(
            " log{level}: {} of {} lines{search}",
            self.matched, self.kept
        );
        if self.lost > 0 || self.evicted > 0 {
            title += &format!(" ({} lost, {} aged out)", self.lost, self.evicted);
        }
        let block = Block::default().borders(Borders::ALL).title(title + " ");
        let fit = block.inner(area).height as usize;
        let first = self.rows.len().saturating_sub(fit);
        let lines: Vec<Line> = self.rows[first..]
            .iter()
            .map(|row| {
                Line::from(vec![
                    Span::raw(format!("{:>10.3} ", row.seconds)),
                    Span::styled(format!("{:<5} ", row.level), level_style(&row.level)),
                    Span::styled(format!("{} ", row.lane), Style::default().fg(Color::Cyan)),
                    Span::raw(row.text.clone()),
                ])
            })
            .collect();
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false })
            .render(area, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(serial: u64, level: &'static str, text: &str) -> LogRow {
        LogRow {
            serial,
            seconds: serial as f64 / 2.0,
            level: level.into(),
            lane: "worker".into(),
            site: String::new(),
            text: text.into(),
        }
    }

    #[test]
    fn the_last_rows_that_fit_show_with_their_level_and_the_counts() {
        let rows = [
            row(1, "INFO", "started"),
            row(2, "WARN", "disk full dev=sda"),
            row(3, "ERROR", "write failed"),
        ];
        let pane = LogPane {
            rows: &rows,
            search: "",
            typing: true,
            min_level: "INFO",
            matched: 3,
            kept: 10,
            lost: 2,
            evicted: 0,
        };
        let area = ratatui::layout::Rect::new(0, 0, 80, 4);
        let mut buf = Buffer::empty(area);
        (&pane).render(area, &mut buf);
        let text = crate::testing::buffer_text(&buf);
        assert!(
            text.contains("log, INFO and above: 3 of 10 lines, search: _ (2 lost, 0 aged out)"),
            "{text}"
        );
        assert!(!text.contains("started"), "only the last two fit: {text}");
        assert!(
            text.contains("     1.000 WARN  worker disk full dev=sda"),
            "{text}"
        );
        assert!(
            text.contains("     1.500 ERROR worker write failed"),
            "{text}"
        );
        assert_eq!(buf[(12, 2)].style().fg, Some(Color::Red), "{text}");
    }
}
