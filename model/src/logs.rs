//! The log: each log event's text (a Text frame's record), the latest
//! kept within a byte budget, and the one search both viewers run over it.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use typhon_live_core::{LaneId, Level, NameId};
use typhon_live_reader::{Names, TextRecord};

use crate::Model;

/// Bytes of log text a model keeps by default (the oldest lines go first).
pub const DEFAULT_LOG_BYTES: usize = 8 << 20;
/// What a line costs beside its text, counted against the budget.
const LINE_OVERHEAD: usize = std::mem::size_of::<LogLine>();

/// One log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// Its place in the log since the session began: 0, 1, 2, ... Lines
    /// that leave the budget keep the numbers of those after them.
    pub serial: u64,
    /// When it was recorded, ns.
    pub time: u64,
    /// The lane it was recorded on, if the writer could say.
    pub lane: Option<LaneId>,
    /// Its level.
    pub level: Level,
    /// Its call site: a name.
    pub site: NameId,
    /// Its text.
    pub text: Box<str>,
    /// The writer cut it to its bound.
    pub cut: bool,
}

/// The log lines of a session, oldest first, within a byte budget.
#[derive(Clone, Debug)]
pub struct Logs {
    lines: VecDeque<LogLine>,
    bytes: usize,
    budget: usize,
    next_serial: u64,
    /// Lines the stream said were lost before they reached the viewer.
    pub lost: u64,
    /// Lines that left the budget.
    pub evicted: u64,
}

impl Default for Logs {
    fn default() -> Self {
        Logs::with_budget(DEFAULT_LOG_BYTES)
    }
}

impl Logs {
    /// An empty log keeping at most `budget` bytes of lines.
    pub fn with_budget(budget: usize) -> Logs {
        Logs {
            lines: VecDeque::new(),
            bytes: 0,
            budget,
            next_serial: 0,
            lost: 0,
            evicted: 0,
        }
    }

    /// Takes in one record; the oldest lines leave while the budget is
    /// passed.
    pub fn push(&mut self, text: &TextRecord<'_>) {
        let line = LogLine {
            serial: self.next_serial,
            time: text.time,
            lane: text.lane,
            level: text.level,
            site: text.site,
            text: text.text.into(),
            cut: text.cut,
        };
        self.next_serial += 1;
        self.bytes += cost(&line);
        self.lines.push_back(line);
        while self.bytes > self.budget {
            let Some(old) = self.lines.pop_front() else {
                break;
            };
            self.bytes -= cost(&old);
            self.evicted += 1;
        }
    }

    /// The lines kept, oldest first.
    pub fn lines(&self) -> &VecDeque<LogLine> {
        &self.lines
    }

    /// The line numbered `serial`, if it is still kept.
    pub fn get(&self, serial: u64) -> Option<&LogLine> {
        let first = self.lines.front()?.serial;
        self.lines
            .get(usize::try_from(serial.checked_sub(first)?).ok()?)
    }

    /// Bytes the kept lines cost.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The number the next line will get: every line ever taken in.
    pub fn received(&self) -> u64 {
        self.next_serial
    }

    /// Forgets every line (the clock started over); the counts stay.
    pub fn clear(&mut self) {
        self.evicted += self.lines.len() as u64;
        self.lines.clear();
        self.bytes = 0;
    }
}

fn cost(line: &LogLine) -> usize {
    LINE_OVERHEAD + line.text.len()
}

/// What a search keeps: lines at or above a level whose text, or call
/// site's name, holds a string, ignoring ASCII case.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogQuery {
    /// The string to find; empty finds every line.
    pub text: String,
    /// The least severe level shown.
    pub min_level: Option<Level>,
}

impl LogQuery {
    /// Whether `line` (whose call site's name is in `names`) matches.
    pub fn matches(&self, line: &LogLine, names: &Names) -> bool {
        if self.min_level.is_some_and(|min| line.level < min) {
            return false;
        }
        self.text.is_empty()
            || contains_ignoring_case(&line.text, &self.text)
            || names
                .get(line.site)
                .is_some_and(|site| contains_ignoring_case(site, &self.text))
    }
}

/// Whether `haystack` holds `needle`, ignoring ASCII case.
fn contains_ignoring_case(haystack: &str, needle: &str) -> bool {
    let (haystack, needle) = (haystack.as_bytes(), needle.as_bytes());
    needle.is_empty()
        || haystack
            .windows(needle.len())
            .any(|window| window.eq_ignore_ascii_case(needle))
}

/// A search kept up to date as lines arrive and leave: the serials of
/// the matching lines, found once each, so that a front end redrawing
/// many times a second does not search the whole log each time.
#[derive(Clone, Debug, Default)]
pub struct LogSearch {
    query: LogQuery,
    matched: VecDeque<u64>,
    /// Serials below this were looked at.
    searched_to: u64,
}

impl LogSearch {
    /// The query.
    pub fn query(&self) -> &LogQuery {
        &self.query
    }

    /// Searches for `query` from now on (from scratch if it changed).
    pub fn set_query(&mut self, query: LogQuery) {
        if query != self.query {
            self.query = query;
            self.matched.clear();
            self.searched_to = 0;
        }
    }

    /// Looks at the lines that arrived since the last call, and forgets
    /// the matches that left the log.
    pub fn update(&mut self, logs: &Logs, names: &Names) {
        let first = logs.lines.front().map_or(logs.next_serial, |l| l.serial);
        while self.matched.front().is_some_and(|&s| s < first) {
            self.matched.pop_front();
        }
        if self.searched_to > logs.next_serial {
            // A new session's log: its numbers start again.
            self.matched.clear();
            self.searched_to = 0;
        }
        let from = self.searched_to.max(first);
        let skip = usize::try_from(from - first).unwrap_or(usize::MAX);
        for line in logs.lines.iter().skip(skip) {
            if self.query.matches(line, names) {
                self.matched.push_back(line.serial);
            }
        }
        self.searched_to = logs.next_serial;
    }

    /// The matching lines' serials, oldest first.
    pub fn matched(&self) -> &VecDeque<u64> {
        &self.matched
    }
}

/// A log line as a viewer shows it, its names resolved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogRow {
    /// Its number in the log ([`LogLine::serial`]).
    pub serial: u64,
    /// When, seconds of the session's clock.
    pub seconds: f64,
    /// Its level, as `tracing` prints it.
    pub level: String,
    /// Its lane's name, or `-` when the writer could not say.
    pub lane: String,
    /// Its call site's name.
    pub site: String,
    /// Its text, with `…` when the writer cut it.
    pub text: String,
}

impl Model {
    /// The last `most` lines `search` matched that were recorded by
    /// `until` (ns; `None`: all), oldest first, as a viewer shows them:
    /// a paused view shows the log up to where it is paused.
    pub fn log_rows(&self, search: &LogSearch, until: Option<u64>, most: usize) -> Vec<LogRow> {
        let mut rows: Vec<LogRow> = (search.matched.iter().rev())
            .filter_map(|&serial| self.logs.get(serial))
            .filter(|line| until.is_none_or(|until| line.time <= until))
            .take(most)
            .map(|line| LogRow {
                serial: line.serial,
                seconds: self.seconds(line.time),
                level: line.level.as_str().to_owned(),
                lane: line
                    .lane
                    .and_then(|lane| self.lane_name(lane))
                    .unwrap_or_else(|| "-".into()),
                site: self.name(line.site),
                text: if line.cut {
                    format!("{}…", line.text)
                } else {
                    line.text.to_string()
                },
            })
            .collect();
        rows.reverse();
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(text: &str, level: Level) -> TextRecord<'_> {
        TextRecord {
            time: 1,
            lane: Some(0),
            level,
            site: 1,
            text,
            cut: false,
        }
    }

    #[test]
    fn the_oldest_lines_leave_the_budget_and_searches_follow() {
        let mut names = Names::default();
        names.define(1, "WARN disk");
        let mut logs = Logs::with_budget(3 * (LINE_OVERHEAD + 9));
        let mut search = LogSearch::default();
        search.set_query(LogQuery {
            text: "FULL".into(),
            min_level: Some(Level::Info),
        });
        logs.push(&record("disk full", Level::Warn));
        logs.push(&record("disk ok!", Level::Warn));
        logs.push(&record("all full", Level::Debug));
        search.update(&logs, &names);
        assert_eq!(search.matched(), &[0]);
        logs.push(&record("net full", Level::Error));
        logs.push(&record("cpu full", Level::Error));
        search.update(&logs, &names);
        assert_eq!(logs.evicted, 2);
        assert_eq!(search.matched(), &[3, 4], "line 0 left the log");
        assert_eq!(logs.get(3).map(|l| &*l.text), Some("net full"));
        // The site's name matches too.
        search.set_query(LogQuery {
            text: "disk".into(),
            min_level: None,
        });
        search.update(&logs, &names);
        assert_eq!(search.matched(), &[2, 3, 4]);
    }
}
