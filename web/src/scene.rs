//! What the page's two threads say to each other. The worker holds the
//! stream's socket, reader and model ([`crate::source`]); the page's
//! main thread draws ([`crate::page`]). After each frame the page
//! [`Ask`]s, with what the person did and how wide the timeline is; the
//! worker answers with a [`Scene`]: the visible window laid out, and
//! what the panels show. Never the history: a scene's size goes with
//! the screen, not with the stream.
//!
//! Both go as bytes ([`Message::to_bytes`], postcard): each thread has
//! its own memory. A message that does not read is dropped whole, with
//! its error, and the next one is read.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use typhon_live_model::history::SpanRecord;
use typhon_live_model::memory::SiteSummary;
use typhon_live_model::stats::Distribution;
use typhon_live_model::{FieldSummary, LogRow, MemorySummary};

use crate::flame::{FlameLayout, FlameOf};
use crate::timeline::{BarKind, Layout};

/// What a person asked for in one frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Action {
    /// Pause, or follow the stream again.
    TogglePause,
    /// Zoom by a factor (below 1 narrows) around a share of the width.
    Zoom {
        /// The factor.
        factor: f64,
        /// The share of the width under the cursor.
        at: f64,
    },
    /// Move by a share of the width (positive: later).
    Pan(f64),
    /// Select a span name.
    Select(u32),
    /// Show one span, paused.
    Jump(SpanRecord),
    /// Show the moment a log line was recorded, paused.
    ShowTime(u64),
    /// A capture of the past the page kept and the window after it,
    /// downloaded once whole.
    Capture,
    /// Span names containing this stand out; the list shows them.
    Search(String),
    /// A span was clicked: the flame graph's "this span" and "this lane".
    Clicked(SpanRecord),
    /// What the flame graph folds.
    Flame(FlameOf),
    /// Outline the spans whose samples ran this frame; `None`: none.
    Mark(Option<typhon_live_model::Frame>),
    /// The log shows lines holding `text`, at or above `min_level` (a
    /// level's byte on the wire, FORMAT.md "Text").
    Log {
        /// The string to find.
        text: String,
        /// The least severe level shown.
        min_level: Option<u8>,
    },
}

/// A bar under the pointer: the worker says what needs the history (the
/// tick it began in, and an ended span's time outside its children).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hover {
    /// Host time the span began.
    pub start: u64,
    /// The span, if it ended.
    pub span: Option<SpanRecord>,
}

impl Hover {
    /// The hover of a bar, if it stands for one span.
    pub fn of(kind: &BarKind) -> Option<Hover> {
        match kind {
            BarKind::Span(span) => Some(Hover {
                start: span.start,
                span: Some(*span),
            }),
            BarKind::Open(span) => Some(Hover {
                start: span.start,
                span: None,
            }),
            BarKind::Folded(_) => None,
        }
    }
}

/// What the worker found for a [`Hover`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hovered {
    /// What was asked.
    pub hover: Hover,
    /// The tick it began in.
    pub tick: Option<u64>,
    /// An ended span's time outside its children.
    pub self_ns: Option<u64>,
}

/// The page's question after a frame.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Ask {
    /// What the person did since the last question, in order.
    pub actions: Vec<Action>,
    /// The timeline's width, pixels.
    pub width: f32,
    /// The bar under the pointer.
    pub hover: Option<Hover>,
    /// The test hook was read: send the stream's side of it.
    pub hook: bool,
}

/// The header's line: the stream's figures, as said.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The process's name.
    pub process: String,
    /// The connection, as a word or two.
    pub connection: String,
    /// Events a second, lately.
    pub events_per_second: f64,
    /// What was lost: frames, events, damage, restarts, reconnects.
    pub lost: String,
    /// Whether anything was lost (said in the alarm's colour).
    pub alarm: bool,
    /// The history held: its seconds and bytes of its budget.
    pub history: String,
    /// The model's notice, if any.
    pub notice: Option<String>,
}

/// One span name listed beside the timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Listed {
    /// Its id.
    pub id: u32,
    /// Its text.
    pub name: String,
    /// Spans that ended, and their time, over what the list is over.
    pub count: u64,
    /// See `count`, ms.
    pub total_ms: f64,
    /// The bytes they allocated themselves.
    pub allocated_bytes: u64,
}

/// The selected name's statistics.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Selected {
    /// Its id and text.
    pub id: u32,
    /// See `id`.
    pub name: String,
    /// Its durations.
    pub distribution: Distribution,
    /// Its longest spans, longest first, with the bytes each allocated
    /// itself where it did.
    pub longest: Vec<(SpanRecord, Option<u64>)>,
    /// Its fields.
    pub fields: Vec<FieldSummary>,
    /// Its share of CPU, as two lines, where samples cover it.
    pub cpu: Option<[String; 2]>,
}

/// The log panel's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LogFigures {
    /// Lines matching the search, lines kept, lines the stream lost,
    /// lines aged out.
    pub matched: usize,
    /// See `matched`.
    pub kept: usize,
    /// See `matched`.
    pub lost: u64,
    /// See `matched`.
    pub evicted: u64,
}

/// The worker's answer: what to draw.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Scene {
    /// The visible window, laid out.
    pub layout: Layout,
    /// The text of each name the layout or the selection draws.
    pub names: Vec<(u32, String)>,
    /// Whether the view is paused, its length (ns), and the name
    /// selected.
    pub paused: bool,
    /// See `paused`.
    pub window_length: u64,
    /// See `paused`.
    pub selected: Option<u32>,
    /// The stream's now as the view draws it (paused: the pause's), ns.
    pub now: u64,
    /// The header's line.
    pub header: Header,
    /// The span names, by total time, over what the selection is over
    /// (the live history, or the pinned one while paused).
    pub listed: Vec<Listed>,
    /// The selected name's statistics.
    pub selection: Option<Selected>,
    /// The log's figures, once the stream sent a line.
    pub log: Option<LogFigures>,
    /// The log's rows, when they changed since the last scene.
    pub log_rows: Option<Vec<LogRow>>,
    /// The memory, where the stream tells it.
    pub memory: Option<MemorySummary>,
    /// The flame graph of what [`Scene::flame_of`] says, where stacks
    /// were sampled.
    pub flame: Option<FlameLayout>,
    /// See `flame`.
    pub flame_of: FlameOf,
    /// What the worker found for the page's last hover.
    pub hovered: Option<Hovered>,
    /// The stream's side of the test hook, as JSON, when asked.
    pub hook: Option<String>,
    /// A capture made whole, as a trace file's bytes, to download.
    pub download: Option<Vec<u8>>,
}

impl Scene {
    /// The memory panel's site `site`, in either of its tables.
    pub fn site(&self, site: u32) -> Option<&SiteSummary> {
        let memory = self.memory.as_ref()?;
        (memory.sites_by_growth.iter())
            .chain(&memory.sites_by_live)
            .find(|s| s.site == site)
    }
}

/// A message between the page's threads.
pub trait Message: Serialize + DeserializeOwned {
    /// Its bytes.
    fn to_bytes(&self) -> Vec<u8> {
        // Every type here serializes: postcard fails only on a sequence
        // of unknown length, which serde's derives never make.
        postcard::to_allocvec(self).unwrap_or_default()
    }

    /// Reads one from `bytes`.
    fn from_bytes(bytes: &[u8]) -> Result<Self, postcard::Error> {
        postcard::from_bytes(bytes)
    }
}

impl Message for Ask {}
impl Message for Scene {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ask_and_a_scene_read_back_as_sent() {
        let span = SpanRecord {
            start: 7,
            duration: u64::MAX,
            arg: 3,
            id: 1,
            parent: 0,
            name: 9,
            lane: 2,
            has_arg: true,
            poll: false,
        };
        let ask = Ask {
            actions: vec![
                Action::Zoom {
                    factor: 0.5,
                    at: f64::NAN,
                },
                Action::Jump(span),
                Action::Log {
                    text: "x".into(),
                    min_level: Some(4),
                },
            ],
            width: 1400.0,
            hover: Some(Hover {
                start: 7,
                span: Some(span),
            }),
            hook: true,
        };
        let back = Ask::from_bytes(&ask.to_bytes()).unwrap();
        // NaN is not equal to itself: compared as bits.
        assert!(
            matches!(back.actions[0], Action::Zoom { factor, at } if factor == 0.5 && at.is_nan())
        );
        assert_eq!(back.actions[1..], ask.actions[1..]);
        assert_eq!(
            (back.width, back.hover, back.hook),
            (1400.0, ask.hover, true)
        );

        let mut scene = Scene {
            names: vec![(9, "Sim.AI".into())],
            download: Some(vec![1, 2, 3]),
            ..Scene::default()
        };
        scene.layout.bars = 5;
        let back = Scene::from_bytes(&scene.to_bytes()).unwrap();
        assert_eq!(back.names, scene.names);
        assert_eq!((back.layout.bars, back.download), (5, scene.download));
    }

    #[test]
    fn bytes_that_are_not_a_message_are_an_error() {
        let bytes = Ask::default().to_bytes();
        assert!(Scene::from_bytes(&[0xff; 3]).is_err());
        assert!(Ask::from_bytes(&bytes[..bytes.len() - 1]).is_err());
    }
}
