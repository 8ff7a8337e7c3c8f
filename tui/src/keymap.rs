//! The keys: one table drives both what a key does and the help line.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::action::Action;

/// A key and what it does.
pub struct Binding {
    /// The key.
    pub code: KeyCode,
    /// With these modifiers.
    pub mods: KeyModifiers,
    /// What it does.
    pub action: Action,
    /// Its name in the help line (empty: not listed).
    pub key: &'static str,
    /// What the help line says it does.
    pub help: &'static str,
}

const fn bind(code: KeyCode, action: Action, key: &'static str, help: &'static str) -> Binding {
    Binding {
        code,
        mods: KeyModifiers::NONE,
        action,
        key,
        help,
    }
}

/// Every key of the live view.
pub const KEYS: &[Binding] = &[
    bind(KeyCode::Char('q'), Action::Quit, "q", "quit"),
    bind(KeyCode::Esc, Action::Quit, "", ""),
    Binding {
        code: KeyCode::Char('c'),
        mods: KeyModifiers::CONTROL,
        action: Action::Quit,
        key: "",
        help: "",
    },
    bind(KeyCode::Char(' '), Action::TogglePause, "space", "pause"),
    bind(KeyCode::Left, Action::StepBack, "←/→", "tick"),
    bind(KeyCode::Right, Action::StepForward, "", ""),
    bind(KeyCode::PageUp, Action::PageBack, "PgUp/PgDn", "screen"),
    bind(KeyCode::PageDown, Action::PageForward, "", ""),
    bind(KeyCode::Home, Action::Oldest, "Home/End", "oldest/live"),
    bind(KeyCode::End, Action::Live, "", ""),
    bind(KeyCode::Char('w'), Action::WorstTick, "w", "worst tick"),
    bind(KeyCode::Char('t'), Action::NextTrigger, "t", "trigger"),
    bind(KeyCode::Char('c'), Action::Capture, "c", "capture"),
    bind(KeyCode::Char('+'), Action::ZoomIn, "+/-", "zoom"),
    bind(KeyCode::Char('='), Action::ZoomIn, "", ""),
    bind(KeyCode::Char('-'), Action::ZoomOut, "", ""),
    bind(KeyCode::Up, Action::SelectUp, "↑/↓", "span"),
    bind(KeyCode::Down, Action::SelectDown, "", ""),
    bind(KeyCode::Char('/'), Action::Filter, "/", "filter"),
    bind(KeyCode::Char('m'), Action::JumpToMax, "m", "its max"),
    bind(KeyCode::Char('l'), Action::ToggleLog, "l", "log"),
    bind(KeyCode::Char('a'), Action::ToggleSites, "a", "memory sites"),
    bind(KeyCode::Char('f'), Action::ToggleCode, "f", "which code"),
    bind(KeyCode::Char('v'), Action::LogLevel, "v", "log level"),
];

/// What `event` asks, if it is a key press of the table.
pub fn lookup(keys: &[Binding], event: &KeyEvent) -> Option<Action> {
    if event.kind != KeyEventKind::Press {
        return None;
    }
    keys.iter()
        .find(|b| b.code == event.code && b.mods == event.modifiers)
        .map(|b| b.action)
}

/// The help line: "q quit  space pause  ...".
pub fn help(keys: &[Binding]) -> String {
    keys.iter()
        .filter(|b| !b.key.is_empty())
        .map(|b| format!("{} {}", b.key, b.help))
        .collect::<Vec<_>>()
        .join("  ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_actions_and_the_help_lists_them() {
        let press = |code, mods| KeyEvent::new(code, mods);
        assert_eq!(
            lookup(KEYS, &press(KeyCode::Char(' '), KeyModifiers::NONE)),
            Some(Action::TogglePause)
        );
        assert_eq!(
            lookup(KEYS, &press(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(
            lookup(KEYS, &press(KeyCode::Char('x'), KeyModifiers::NONE)),
            None
        );
        assert_eq!(
            help(KEYS),
            "q quit  space pause  ←/→ tick  PgUp/PgDn screen  Home/End oldest/live  w worst tick  \
             t trigger  c capture  +/- zoom  ↑/↓ span  / filter  m its max  l log  a memory sites  f which code  v log level"
        );
    }
}
