//! The allocation sites (`a`): the sites whose bytes grow fastest over
//! the last minute, then those that hold the most, each with its bytes,
//! its growth and its samples; the fastest-growing site's stack below.
//! The title says how much the process holds, and what share of the
//! samples the estimates are from.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use typhon_live_model::memory::bytes;
use typhon_live_model::{MemorySummary, SiteSummary};

/// The sites pane.
pub struct SitesPane<'a> {
    /// What the model knows of the memory; `None` before the stream told
    /// any (the process does not count its memory).
    pub memory: Option<&'a MemorySummary>,
}

fn row(site: &SiteSummary) -> Line<'static> {
    Line::from(vec![
        Span::raw(format!("{:>11} ", bytes(site.live as f64))),
        Span::styled(
            format!("{:>15}", site.growth()),
            Style::default().fg(Color::Yellow),
        ),
        Span::raw(format!(" {:>12}  ", site.samples())),
        Span::styled(site.label.clone(), Style::default().fg(Color::Cyan)),
    ])
}

impl Widget for &SitesPane<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let Some(memory) = self.memory else {
            Paragraph::new(
                "no memory in the stream: the process counts it with \
                 `#[global_allocator] static A: typhon_live_std::Tracking<System>`",
            )
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" allocation sites "),
            )
            .render(area, buf);
            return;
        };
        let title = format!(" allocation sites: {} ", memory.says());
        let heading = |text: &str| {
            Line::from(Span::styled(
                text.to_owned(),
                Style::default().add_modifier(Modifier::BOLD),
            ))
        };
        let mut lines = vec![heading("growing fastest (last minute)")];
        lines.extend(memory.sites_by_growth.iter().take(5).map(row));
        if memory.sites_by_growth.is_empty() {
            lines.push(Line::raw("  none growing"));
        }
        lines.push(heading("holding the most"));
        lines.extend(memory.sites_by_live.iter().take(5).map(row));
        if let Some(top) = memory.sites_by_growth.first() {
            lines.push(heading(&format!("stack of {}", top.label)));
            lines.extend(
                top.stack
                    .iter()
                    .map(|frame| Line::raw(format!("  {frame}"))),
            );
        }
        Paragraph::new(lines)
            .block(Block::default().borders(Borders::ALL).title(title))
            .render(area, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{buffer_text, feed};

    fn render(pane: &SitesPane<'_>) -> String {
        let area = Rect::new(0, 0, 100, 14);
        let mut buf = Buffer::empty(area);
        pane.render(area, &mut buf);
        buffer_text(&buf)
    }

    #[test]
    fn the_growing_site_comes_first_with_its_stack() {
        let mut model = typhon_live_model::Model::default();
        feed(&mut model, &typhon_live_tests::memory_stream());
        let summary = model.summary(std::time::Duration::ZERO);
        let text = render(&SitesPane {
            memory: summary.memory.as_ref(),
        });
        assert!(
            text.contains(
                "allocation sites: 152.6 MiB live, estimates from 100 % of 320 samples, 1 in 512.0 KiB"
            ),
            "{text}"
        );
        let growing = text.find("growing fastest").unwrap();
        let holding = text.find("holding the most").unwrap();
        let leak = text.find("    9.5 MiB   +57.2 MiB/min   20 samples  demo::cache_replay_frame");
        assert!(
            leak.is_some_and(|at| growing < at && at < holding),
            "{text}"
        );
        let held = text.find("   47.7 MiB                  100 samples  demo::load_level");
        assert!(held.is_some_and(|at| holding < at), "{text}");
        assert!(text.contains("stack of demo::cache_replay_frame"), "{text}");
        assert!(text.contains("  demo::simulate (demo.rs:400)"), "{text}");
        // Without memory in the stream, the pane says how to count it.
        let none = render(&SitesPane { memory: None });
        assert!(none.contains("no memory in the stream"), "{none}");
    }
}
