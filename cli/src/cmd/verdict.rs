//! What `compare`, `check` and `attach --assert` share: how a verdict is
//! written (a table, JSON, Markdown, JUnit XML) and the exit code it
//! ends with. A failing verdict exits 8; damage wins with 4 unless
//! `--allow-damage`.

use std::path::PathBuf;

use serde::Serialize;

use crate::error::CliError;

/// The flags of a verdict's outputs.
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct Outputs {
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

/// Writes `verdict` as `outputs` and `json` ask, then ends as it says:
/// `failed` (what failed, for the error line) exits 8, `damaged` exits 4
/// unless allowed.
pub fn deliver(
    outputs: &Outputs,
    json: bool,
    verdict: &impl Serialize,
    written: Written,
    failed: Option<String>,
    damaged: bool,
) -> Result<(), CliError> {
    if let Some(path) = &outputs.junit {
        std::fs::write(path, &written.junit).map_err(|e| CliError::File {
            path: path.clone(),
            reason: e.to_string(),
        })?;
    }
    let text = if json {
        serde_json::to_string_pretty(verdict).unwrap_or_default() + "\n"
    } else if outputs.markdown {
        written.markdown
    } else {
        written.table
    };
    print!("{text}");
    if damaged && !outputs.allow_damage {
        return Err(CliError::Damaged);
    }
    match failed {
        Some(what) => Err(CliError::Verdict(what)),
        None => Ok(()),
    }
}
