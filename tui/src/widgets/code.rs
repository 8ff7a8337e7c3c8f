//! Which code ran (`f`), for the selected span name: the stacks sampled
//! in its spans, as the functions that ran most (in how many samples each
//! ran itself, and was on the stack) and a top-down tree, each callee
//! under its caller with its share, as deep as the pane has room for. The
//! title says how many samples it folds, and how they were walked.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use typhon_live_model::Profile;
use typhon_live_reader::Names;

/// Functions listed at most.
const TOP: usize = 8;
/// A callee below this share of the samples is not listed in the tree.
const MIN_SHARE: f64 = 0.01;

/// The code pane.
pub struct CodePane<'a> {
    /// The selected name's text, and its spans' samples folded; `None`
    /// with no name selected.
    pub selected: Option<(&'a str, &'a Profile)>,
    /// Names, for the frames.
    pub names: &'a Names,
}

impl Widget for &CodePane<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let block = |title: String| Block::default().borders(Borders::ALL).title(title);
        let Some((name, profile)) = self.selected else {
            Paragraph::new("select a span name (↑/↓): which code its spans ran")
                .block(block(" which code ran ".into()))
                .render(area, buf);
            return;
        };
        if profile.is_empty() {
            Paragraph::new(
                "no stack sampled in its spans: the process samples them with \
                 StackSampleHz (Linux)",
            )
            .block(block(format!(" which code ran in {name} ")))
            .render(area, buf);
            return;
        }
        let samples = profile.samples;
        let percent = |n: u64| n as f64 * 100.0 / samples as f64;
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let mut lines = vec![Line::from(Span::styled("  self  total  function", bold))];
        for f in profile.functions.iter().take(TOP) {
            lines.push(Line::from(vec![
                Span::styled(
                    format!("{:>5.1}% {:>5.1}%  ", percent(f.own), percent(f.total)),
                    Style::default().fg(Color::Yellow),
                ),
                Span::raw(f.frame.function(self.names)),
            ]));
        }
        lines.push(Line::from(Span::styled("top-down", bold)));
        // Depth first, most samples first: as deep as there is room.
        let room = usize::from(area.height.saturating_sub(2));
        let mut todo: Vec<u32> = profile.nodes[0].children.iter().rev().copied().collect();
        while let Some(id) = todo.pop() {
            if lines.len() >= room {
                break;
            }
            let node = &profile.nodes[id as usize];
            let indent = "  ".repeat(usize::from(node.depth.saturating_sub(1)).min(20));
            lines.push(Line::from(vec![
                Span::styled(
                    format!("{:>5.1}% ", percent(node.total)),
                    Style::default().fg(Color::Yellow),
                ),
                Span::raw(format!("{indent}{}", node.frame.function(self.names))),
            ]));
            let callees = node.children.iter().rev();
            todo.extend(callees.filter(|&&c| {
                profile.nodes[c as usize].total as f64 >= MIN_SHARE * samples as f64
            }));
        }
        let mut title = format!(" which code ran in {name}: {samples} samples");
        if profile.cut > 0 {
            title += &format!(", {} cut", profile.cut);
        }
        if profile.frame_pointers > 0 {
            title += &format!(", {} by frame pointers", profile.frame_pointers);
        }
        Paragraph::new(lines)
            .block(block(title + " "))
            .render(area, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{buffer_text, feed};
    use typhon_live_model::{Model, Selection};

    fn render(pane: &CodePane<'_>) -> String {
        let area = Rect::new(0, 0, 80, 14);
        let mut buf = Buffer::empty(area);
        pane.render(area, &mut buf);
        buffer_text(&buf)
    }

    #[test]
    fn a_names_functions_and_its_tree_are_listed() {
        let mut model = Model::default();
        feed(&mut model, &typhon_live_tests::stacks_stream());
        let chunks = model.history().chunks().iter().map(|c| &**c);
        let profile = Profile::of(chunks, model.state().stacks(), Selection::Name(3));
        let text = render(&CodePane {
            selected: Some(("run", &profile)),
            names: model.names(),
        });
        assert!(text.contains("which code ran in run: 1 samples"), "{text}");
        // `hash`, inlined into `spin`, ran; `run` called it.
        assert!(text.contains("100.0% 100.0%  hash"), "{text}");
        assert!(text.contains("  0.0% 100.0%  run"), "{text}");
        let tree = text.find("top-down").unwrap();
        let at = |line: &str| text[tree..].find(line).map(|at| at + tree);
        let (outer, run, spin, hash) = (
            at("100.0% 0x401000").unwrap(),
            at("100.0%   run").unwrap(),
            at("100.0%     spin").unwrap(),
            at("100.0%       hash").unwrap(),
        );
        assert!(outer < run && run < spin && spin < hash, "{text}");
        // No name, or no samples: the pane says why.
        let none = render(&CodePane {
            selected: None,
            names: model.names(),
        });
        assert!(none.contains("select a span name"), "{none}");
        let empty = Profile::default();
        let empty = render(&CodePane {
            selected: Some(("run", &empty)),
            names: model.names(),
        });
        assert!(empty.contains("no stack sampled"), "{empty}");
    }
}
