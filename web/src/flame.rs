//! The flame graph of a selection (an icicle: the root on top, callees
//! below their callers), laid out on the worker from the model's
//! [`Profile`] ([`lay_out`], pure, in shares of the width), and painted
//! on the page ([`paint`]). A frame narrower than a pixel's share is not
//! laid out, nor is anything under it (puffin's culling), so a scene's
//! size goes with the screen, not with the stacks.

use egui::{Align2, Color32, FontId, Painter, Pos2, Rect, Sense, Stroke, StrokeKind};
use serde::{Deserialize, Serialize};
use typhon_live_model::history::SpanRecord;
use typhon_live_model::{Frame, Profile};
use typhon_live_reader::Names;

/// Frames laid out at most.
pub const MAX_FLAME_BARS: usize = 4096;
/// Height of one depth.
pub const FLAME_ROW: f32 = 16.0;

/// What the flame graph folds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum FlameOf {
    /// The selected name's spans; the window's, with no name selected.
    #[default]
    Name,
    /// One span: the last one clicked.
    Span(SpanRecord),
    /// Every lane, over the visible window.
    Window,
    /// One lane over the visible window: the last span clicked's.
    Lane(u16),
}

/// One frame of the graph.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlameBar {
    /// Its left and right edges, as shares of the width.
    pub x0: f32,
    /// See `x0`.
    pub x1: f32,
    /// 0 for the root.
    pub depth: u16,
    /// Its function, and its text in [`FlameLayout::texts`].
    pub frame: Frame,
    /// See `frame`.
    pub text: u32,
    /// Samples through it, and samples in which it ran.
    pub total: u64,
    /// See `total`.
    pub own: u64,
}

/// The graph of one selection.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FlameLayout {
    /// What it folds, as the panel names it.
    pub title: String,
    /// What it folded: samples, those cut, those walked by frame
    /// pointers.
    pub samples: u64,
    /// See `samples`.
    pub cut: u64,
    /// See `samples`.
    pub frame_pointers: u64,
    /// Its frames, outermost first, each above its callees.
    pub bars: Vec<FlameBar>,
    /// The functions' texts, each once.
    pub texts: Vec<String>,
    /// The functions that ran most: text, samples in which each ran, on
    /// whose stacks it was, and the frame.
    pub top: Vec<(String, u64, u64, Frame)>,
    /// The program's function that ran most (past the standard
    /// library's), its share of the samples, and the frame.
    pub hottest: Option<(String, f64, Frame)>,
    /// The frame clicked, and the spans in the window whose samples ran
    /// it (drawn outlined on the timeline).
    pub marked: Option<Frame>,
    /// See `marked`.
    pub marked_spans: Vec<SpanRecord>,
    /// When the newest sample folded was taken, ns since the Unix epoch
    /// (the stream's clock placed on it): how fresh the graph is.
    pub newest_unix_ns: Option<u64>,
}

impl FlameLayout {
    /// The text of bar `bar`.
    pub fn text(&self, bar: &FlameBar) -> &str {
        self.texts.get(bar.text as usize).map_or("", String::as_str)
    }
}

/// Lays out `profile` across `width` pixels: frames narrower than a
/// pixel are left out, with their callees; at most [`MAX_FLAME_BARS`].
pub fn lay_out(profile: &Profile, names: &Names, title: String, width: f32) -> FlameLayout {
    let mut layout = FlameLayout {
        title,
        samples: profile.samples,
        cut: profile.cut,
        frame_pointers: profile.frame_pointers,
        top: (profile.functions.iter().take(10))
            .map(|f| (f.frame.function(names), f.own, f.total, f.frame))
            .collect(),
        hottest: (profile.hottest_of_program(names))
            .map(|(f, share)| (f.function(names), share, f)),
        ..FlameLayout::default()
    };
    let Some(root) = profile.nodes.first().filter(|r| r.total > 0) else {
        return layout;
    };
    let min_share = 1.0 / f64::from(width.max(1.0));
    let mut texts: std::collections::HashMap<Frame, u32> = Default::default();
    // The trunk: the frames every sample ran in, one under the next (a
    // thread's start, its main loop), folded into one row, so that where
    // the samples part ways is in sight.
    let mut trunk = vec![0u32];
    while let [only] = profile.nodes[*trunk.last().unwrap_or(&0) as usize].children[..] {
        if profile.nodes[only as usize].total < root.total {
            break;
        }
        trunk.push(only);
    }
    let (start, folded) = match trunk[..] {
        [_, outer, .., inner] if trunk.len() > 3 => {
            let (outer, inner) = (
                &profile.nodes[outer as usize],
                &profile.nodes[inner as usize],
            );
            layout.bars.push(root_bar(root));
            layout.texts.push(format!(
                "{} frames every sample ran in: {} … {}",
                trunk.len() - 1,
                outer.frame.function(names),
                inner.frame.function(names)
            ));
            layout.bars.push(FlameBar {
                depth: 1,
                text: layout.texts.len() as u32 - 1,
                frame: inner.frame,
                ..root_bar(inner)
            });
            (inner.children.clone(), inner.depth - 1)
        }
        _ => (vec![0], 0),
    };
    // Depth first, each node's callees left to right from its left edge.
    let mut todo: Vec<(u32, f64)> = Vec::new();
    let mut at = 0.0;
    for &id in &start {
        let share = profile.nodes[id as usize].total as f64 / root.total as f64;
        if share >= min_share {
            todo.push((id, at));
        }
        at += share;
    }
    todo.reverse();
    while let Some((id, x0)) = todo.pop() {
        if layout.bars.len() >= MAX_FLAME_BARS {
            break;
        }
        let node = &profile.nodes[id as usize];
        let share = node.total as f64 / root.total as f64;
        let text = if id == 0 {
            u32::MAX
        } else {
            *texts.entry(node.frame).or_insert_with(|| {
                layout.texts.push(node.frame.function(names));
                layout.texts.len() as u32 - 1
            })
        };
        layout.bars.push(FlameBar {
            x0: x0 as f32,
            x1: (x0 + share) as f32,
            depth: node.depth - folded,
            frame: node.frame,
            text,
            total: node.total,
            own: node.own,
        });
        let mut at = x0;
        let mut callees = Vec::new();
        for &child in &node.children {
            let share = profile.nodes[child as usize].total as f64 / root.total as f64;
            if share >= min_share {
                callees.push((child, at));
            }
            at += share;
        }
        // Popped left to right.
        todo.extend(callees.into_iter().rev());
    }
    layout
}

/// The bar of `node`, across the whole width at its depth.
fn root_bar(node: &typhon_live_model::CallNode) -> FlameBar {
    FlameBar {
        x0: 0.0,
        x1: 1.0,
        depth: node.depth,
        frame: node.frame,
        text: u32::MAX,
        total: node.total,
        own: node.own,
    }
}

/// What the person did to the graph.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlameInput {
    /// The bar under the pointer.
    pub hovered: Option<FlameBar>,
    /// The bar clicked.
    pub clicked: Option<FlameBar>,
}

/// The height of `layout`, all its depths.
pub fn height(layout: &FlameLayout) -> f32 {
    let depths = layout.bars.iter().map(|b| b.depth).max().unwrap_or(0);
    (f32::from(depths) + 1.0) * FLAME_ROW
}

/// Paints `layout` in `rect` (as high as [`height`] says, or more): the
/// root on top, a frame's colour from its function, the marked frame
/// outlined.
pub fn paint(ui: &mut egui::Ui, rect: Rect, layout: &FlameLayout) -> FlameInput {
    let response = ui.allocate_rect(rect, Sense::click());
    let painter: Painter = ui.painter().with_clip_rect(rect);
    painter.rect_filled(rect, 0.0, Color32::from_gray(24));
    let font = FontId::proportional(11.0);
    let mut input = FlameInput::default();
    let pointer = response.hover_pos();
    for bar in &layout.bars {
        let y0 = rect.top() + f32::from(bar.depth) * FLAME_ROW;
        let r = Rect::from_min_max(
            Pos2::new(rect.left() + bar.x0 * rect.width(), y0),
            Pos2::new(rect.left() + bar.x1 * rect.width(), y0 + FLAME_ROW - 1.0),
        );
        if r.top() > rect.bottom() {
            continue;
        }
        let fill = if bar.depth == 0 {
            Color32::from_gray(70)
        } else {
            colour_of(bar.frame)
        };
        painter.rect_filled(r, 0.0, fill);
        if layout.marked == Some(bar.frame) && bar.depth > 0 {
            painter.rect_stroke(r, 0.0, Stroke::new(2.0, Color32::WHITE), StrokeKind::Inside);
        }
        if r.width() > 30.0 {
            let text = if bar.depth == 0 {
                format!("all: {} samples", layout.samples)
            } else {
                layout.text(bar).to_owned()
            };
            painter.text(
                r.left_center() + egui::vec2(3.0, 0.0),
                Align2::LEFT_CENTER,
                clip(&text, r.width()),
                font.clone(),
                Color32::BLACK,
            );
        }
        if pointer.is_some_and(|p| r.contains(p)) {
            input.hovered = Some(*bar);
        }
    }
    if response.clicked() {
        input.clicked = input.hovered;
    }
    if let Some(bar) = input.hovered {
        response.on_hover_ui_at_pointer(|ui| {
            let share = |n: u64| n as f64 * 100.0 / layout.samples.max(1) as f64;
            ui.label(egui::RichText::new(layout.text(&bar)).strong());
            ui.label(format!(
                "total {} samples ({:.1} %), self {} ({:.1} %)",
                bar.total,
                share(bar.total),
                bar.own,
                share(bar.own)
            ));
            ui.label("click: outline the spans whose samples ran it");
        });
    }
    input
}

/// A function's colour: warm, stable across frames and pages.
fn colour_of(frame: Frame) -> Color32 {
    let key = match frame {
        Frame::Function(name) => u64::from(name),
        Frame::Address(address) => address,
    };
    let h = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as u32;
    let hue = 0.0 + (h % 60) as f32 / 360.0;
    egui::ecolor::Hsva::new(hue, 0.55, 0.9, 1.0).into()
}

/// `text` cut to about what `width` pixels hold.
fn clip(text: &str, width: f32) -> String {
    let fits = ((width - 6.0) / 6.0).max(0.0) as usize;
    if text.chars().count() <= fits {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(fits.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use typhon_live_model::{CallNode, FunctionSamples};

    fn node(
        frame: u32,
        parent: u32,
        depth: u16,
        total: u64,
        own: u64,
        children: Vec<u32>,
    ) -> CallNode {
        CallNode {
            frame: Frame::Function(frame),
            parent,
            depth,
            total,
            own,
            children,
        }
    }

    #[test]
    fn callees_sit_under_their_callers_and_a_frame_narrower_than_a_pixel_is_left_out() {
        // main (1000) -> hot (990), cold (10); hot -> leaf (990).
        let profile = Profile {
            nodes: vec![
                node(0, 0, 0, 1000, 0, vec![1]),
                node(1, 0, 1, 1000, 0, vec![2, 3]),
                node(2, 1, 2, 990, 0, vec![4]),
                node(3, 1, 2, 10, 10, vec![]),
                node(4, 2, 3, 990, 990, vec![]),
            ],
            functions: vec![FunctionSamples {
                frame: Frame::Function(4),
                own: 990,
                total: 990,
            }],
            samples: 1000,
            ..Profile::default()
        };
        let names = Names::new();
        let wide = lay_out(&profile, &names, "all".into(), 1000.0);
        let bars: Vec<(u32, u16, f32, f32)> = (wide.bars.iter())
            .map(|b| match b.frame {
                Frame::Function(f) => (f, b.depth, b.x0, b.x1),
                Frame::Address(_) => unreachable!(),
            })
            .collect();
        assert_eq!(
            bars,
            [
                (0, 0, 0.0, 1.0),
                (1, 1, 0.0, 1.0),
                (2, 2, 0.0, 0.99),
                (4, 3, 0.0, 0.99),
                (3, 2, 0.99, 1.0),
            ]
        );
        assert_eq!(wide.top, [("#4".to_string(), 990, 990, Frame::Function(4))]);
        // 50 pixels: `cold`, a hundredth, is under a pixel's share.
        let narrow = lay_out(&profile, &names, "all".into(), 50.0);
        assert_eq!(narrow.bars.len(), 4);
        assert!(narrow.bars.iter().all(|b| b.frame != Frame::Function(3)));
    }

    #[test]
    fn the_frames_every_sample_ran_in_fold_into_one_row() {
        // start -> main -> loop -> (a: 60, b: 40).
        let profile = Profile {
            nodes: vec![
                node(0, 0, 0, 100, 0, vec![1]),
                node(1, 0, 1, 100, 0, vec![2]),
                node(2, 1, 2, 100, 0, vec![3]),
                node(3, 2, 3, 100, 0, vec![4, 5]),
                node(4, 3, 4, 60, 60, vec![]),
                node(5, 3, 4, 40, 40, vec![]),
            ],
            samples: 100,
            ..Profile::default()
        };
        let layout = lay_out(&profile, &Names::new(), "all".into(), 1000.0);
        let rows: Vec<(u16, String, f32, f32)> = (layout.bars.iter())
            .map(|b| (b.depth, layout.text(b).to_owned(), b.x0, b.x1))
            .collect();
        assert_eq!(
            rows,
            [
                (0, String::new(), 0.0, 1.0),
                (1, "3 frames every sample ran in: #1 … #3".into(), 0.0, 1.0),
                (2, "#4".into(), 0.0, 0.6),
                (2, "#5".into(), 0.6, 1.0),
            ]
        );
    }
}
