//! What the person looks at: the window of host time, live or paused,
//! the selected span name and the search. No drawing here, and no clock:
//! `now` is the model's host time, passed in.

use typhon_live_model::{LogQuery, TimelineInputs};

/// The narrowest window: 1 µs across.
pub const MIN_WINDOW: u64 = 1_000;
/// The widest: ten minutes.
pub const MAX_WINDOW: u64 = 600_000_000_000;
/// The window a page opens with: 100 ms, six ticks of a 60 Hz engine.
pub const DEFAULT_WINDOW: u64 = 100_000_000;

/// A stretch of host time, ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Window {
    /// Its left edge.
    pub start: u64,
    /// Its right edge.
    pub end: u64,
}

impl Window {
    /// Its length, ns.
    pub fn len(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where `time` falls, as a share of the width (0 the left edge).
    pub fn fraction(&self, time: u64) -> f64 {
        (time as f64 - self.start as f64) / self.len().max(1) as f64
    }

    /// The time at a share `fraction` of the width.
    pub fn time_at(&self, fraction: f64) -> u64 {
        (self.start as f64 + fraction * self.len() as f64).max(0.0) as u64
    }
}

/// The view's state.
pub struct View {
    /// The window's length, ns.
    length: u64,
    /// The right edge while paused; live, it is the stream's now.
    end: Option<u64>,
    /// What a paused view draws: the model's inputs as of the pause, its
    /// chunks pinned while the history moves on.
    pinned: Option<TimelineInputs>,
    /// The span name whose statistics are shown.
    pub selected: Option<u32>,
    /// Span names containing this are found, and their spans stand out.
    pub search: String,
    /// What the log shows.
    pub log_query: LogQuery,
}

impl Default for View {
    fn default() -> Self {
        View {
            length: DEFAULT_WINDOW,
            end: None,
            pinned: None,
            selected: None,
            search: String::new(),
            log_query: LogQuery::default(),
        }
    }
}

impl View {
    /// Whether the picture is frozen.
    pub fn is_paused(&self) -> bool {
        self.pinned.is_some()
    }

    /// What a paused view draws.
    pub fn pinned(&self) -> Option<&TimelineInputs> {
        self.pinned.as_ref()
    }

    /// Freezes the picture at `inputs` (the model's, now), keeping the
    /// window where it is.
    pub fn pause(&mut self, inputs: TimelineInputs) {
        if self.pinned.is_none() {
            self.end = Some(self.end.unwrap_or(inputs.now));
            self.pinned = Some(inputs);
        }
    }

    /// Follows the stream again.
    pub fn resume(&mut self) {
        self.pinned = None;
        self.end = None;
    }

    /// The window shown when the stream's now is `now` (a paused view's
    /// own now is its pinned inputs').
    pub fn window(&self, now: u64) -> Window {
        let end = self.end.unwrap_or(now);
        Window {
            start: end.saturating_sub(self.length),
            end,
        }
    }

    /// Zooms by `factor` (below 1 narrows) keeping the time at share `at`
    /// of the width under the cursor, within the time held (from 0 to the
    /// pause). Live, the right edge stays the stream's now.
    pub fn zoom(&mut self, factor: f64, at: f64, now: u64) {
        let before = self.window(now);
        let length = ((self.length as f64 * factor) as u64).clamp(MIN_WINDOW, MAX_WINDOW);
        if let (Some(end), Some(pinned)) = (self.end.as_mut(), self.pinned.as_ref()) {
            let anchor = before.time_at(at) as f64;
            let start = (anchor - at * length as f64).max(0.0);
            // Not past the pause: nothing is there.
            *end = ((start + length as f64) as u64).min(pinned.now.max(length));
        }
        self.length = length;
    }

    /// Moves the window by `fraction` of its width (positive: later),
    /// within what the paused view holds. Only a paused view pans.
    pub fn pan(&mut self, fraction: f64) {
        let (Some(end), Some(pinned)) = (self.end, self.pinned.as_ref()) else {
            return;
        };
        let oldest = pinned.chunks.first().map_or(0, |c| c.earliest_start);
        let shifted = end as f64 + fraction * self.length as f64;
        let lowest = oldest.saturating_add(self.length.min(MIN_WINDOW * 10)) as f64;
        self.end = Some(shifted.clamp(lowest, pinned.now.max(1) as f64) as u64);
    }

    /// Shows `start..start + length` with some room either side (a
    /// longest occurrence jumped to). The view must be paused.
    pub fn show(&mut self, start: u64, length: u64) {
        if self.pinned.is_some() {
            self.length = (length.saturating_mul(3)).clamp(MIN_WINDOW, MAX_WINDOW);
            self.end = Some(start.saturating_add(length).saturating_add(self.length / 3));
        }
    }

    /// Centres the window on `time`, keeping its length (a log line
    /// clicked). The view must be paused.
    pub fn centre_on(&mut self, time: u64) {
        if self.pinned.is_some() {
            self.end = Some(time.saturating_add(self.length / 2));
        }
    }

    /// The right edge while paused.
    pub fn paused_at(&self) -> Option<u64> {
        self.end.filter(|_| self.pinned.is_some())
    }

    /// The window's length, ns.
    pub fn length(&self) -> u64 {
        self.length
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(now: u64) -> TimelineInputs {
        TimelineInputs {
            chunks: Vec::new(),
            lanes: Vec::new(),
            now,
            ticks_per_second: 1_000_000_000,
            marks: Vec::new(),
            open_tasks: Vec::new(),
            triggers: Vec::new(),
        }
    }

    #[test]
    fn live_follows_now_and_zooms_at_its_right_edge() {
        let mut view = View::default();
        assert_eq!(view.window(5_000_000_000).end, 5_000_000_000);
        view.zoom(0.5, 0.2, 5_000_000_000);
        let w = view.window(6_000_000_000);
        assert_eq!((w.start, w.end), (5_950_000_000, 6_000_000_000));
    }

    #[test]
    fn paused_zoom_keeps_the_time_under_the_cursor_and_stays_within_its_bounds() {
        let mut view = View::default();
        view.pause(inputs(1_000_000_000));
        let before = view.window(9_999_999_999);
        assert_eq!(before.end, 1_000_000_000, "a paused window ignores now");
        let under = before.time_at(0.25);
        view.zoom(0.1, 0.25, 0);
        let after = view.window(0);
        assert_eq!(after.len(), DEFAULT_WINDOW / 10);
        assert!(after.time_at(0.25).abs_diff(under) <= 1, "{after:?}");
        for _ in 0..100 {
            view.zoom(0.01, 0.5, 0);
        }
        assert_eq!(view.length(), MIN_WINDOW);
        for _ in 0..100 {
            view.zoom(100.0, 0.5, 0);
        }
        assert_eq!(view.length(), MAX_WINDOW);
    }

    #[test]
    fn pan_moves_a_paused_window_and_never_past_its_now() {
        let mut view = View::default();
        view.pan(-1.0);
        assert!(!view.is_paused(), "live does not pan");
        view.pause(inputs(1_000_000_000));
        view.pan(-2.0);
        assert_eq!(view.window(0).end, 1_000_000_000 - 2 * DEFAULT_WINDOW);
        view.pan(50.0);
        assert_eq!(view.window(0).end, 1_000_000_000);
        view.resume();
        assert_eq!(view.window(7).end, 7);
    }
}
