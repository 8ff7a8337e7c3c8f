//! What `compare`, `check` and `attach --assert` share: what of a run
//! is judged (`--warm-up`), how a verdict is written (a table, JSON,
//! Markdown, JUnit XML) and the exit code it ends with. A failing verdict
//! exits 8; damage wins with 4 unless `--allow-damage`.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use typhon_live_verdict::samples::Samples;

use crate::error::CliError;

/// The flags every verdict takes.
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// Not counting what starts in each run's first SECONDS (a warm-up:
    /// caches, a JIT, lazy loading), from the run's first event.
    #[arg(long, value_name = "SECONDS", value_parser = crate::seconds)]
    pub warm_up: Option<Duration>,
    /// Print the verdict as Markdown (a pull request's comment) instead
    /// of the table.
    #[arg(long)]
    pub markdown: bool,
    /// Also write the verdict as JUnit XML to this file: one test case
    /// per name or assertion.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Judge a damaged input as far as it reads instead of failing with
    /// exit code 4.
    #[arg(long)]
    pub allow_damage: bool,
}

/// A verdict's forms, made by its kind.
pub struct Written {
    /// The terminal table.
    pub table: String,
    /// Markdown.
    pub markdown: String,
    /// JUnit XML.
    pub junit: String,
}

/// A side's samples, without each run's warm-up as `flags` say.
pub fn samples(flags: &Flags) -> Samples {
    let warm_up = (flags.warm_up).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    Samples::new().with_warm_up(warm_up)
}

/// Writes `verdict` as `flags` and `json` ask, then ends as it says:
/// `failed` (what failed, for the error line) exits 8, `damaged` exits 4
/// unless allowed.
pub fn deliver(
    flags: &Flags,
    json: bool,
    verdict: &impl Serialize,
    written: Written,
    failed: Option<String>,
    damaged: bool,
) -> Result<(), CliError> {
    if let Some(path) = &flags.junit {
        std::fs::write(path, &written.junit).map_err(|e| CliError::File {
            path: path.clone(),
            reason: e.to_string(),
        })?;
    }
    let text = if json {
        serde_json::to_string_pretty(verdict).unwrap_or_default() + "\n"
    } else if flags.markdown {
        written.markdown
    } else {
        written.table
    };
    print!("{text}");
    if damaged && !flags.allow_damage {
        return Err(CliError::Damaged);
    }
    match failed {
        Some(what) => Err(CliError::Verdict(what)),
        None => Ok(()),
    }
}
