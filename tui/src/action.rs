//! What a key asks of the view.

/// A user's request, from a key (see [`super::keymap`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Leave.
    Quit,
    /// Stop the picture (the stream is still read), or follow it again.
    TogglePause,
    /// The window one tick back or forward (pauses).
    StepBack,
    /// See `StepBack`.
    StepForward,
    /// The window one window back or forward (pauses).
    PageBack,
    /// See `PageBack`.
    PageForward,
    /// The oldest part of the history (pauses).
    Oldest,
    /// Follow the live edge again.
    Live,
    /// The worst (longest) tick in the history (pauses).
    WorstTick,
    /// Half or twice the time across the window.
    ZoomIn,
    /// See `ZoomIn`.
    ZoomOut,
    /// The span name above or below in the list.
    SelectUp,
    /// See `SelectUp`.
    SelectDown,
    /// Type a filter for the span names (Enter or Esc ends it).
    Filter,
    /// The tick of the selected span name's longest span (pauses).
    JumpToMax,
    /// Show the log in place of the span names, or the names again.
    ToggleLog,
    /// Show the allocation sites in place of the span names, or the
    /// names again.
    ToggleSites,
    /// Show which code the selected name's spans ran (their sampled
    /// stacks) in place of the span statistics, or the statistics again.
    ToggleCode,
    /// The log's least level shown: all, info, warn, error, then all.
    LogLevel,
    /// A capture's next trigger: its tick or span shown, the span it
    /// fired on selected (pauses). A capture opens on its first.
    NextTrigger,
    /// Ask the flight recorder the view keeps for a capture: the past it
    /// kept, and the window after (the attaching command writes it).
    Capture,
}
