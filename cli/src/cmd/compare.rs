//! `typhon-live compare BASE NEW`: did a change make it slower? Each side
//! is a trace or a folder of runs; every span name and the ticks are
//! compared (typhon-live-verdict), and a regression exits 8.

use std::path::{Path, PathBuf};

use typhon_live_verdict::compare::{self, Options};
use typhon_live_verdict::report;
use typhon_live_verdict::samples::Side;
use typhon_live_verdict::stats::{Bootstrap, Stat};

use crate::cmd::verdict::{self, Flags, Written};
use crate::error::CliError;
use crate::trace_file;

/// `compare`'s arguments.
#[derive(clap::Args)]
pub struct CompareOptions {
    /// The base side: a trace file, or a folder of runs (its *.tlt files).
    pub base: PathBuf,
    /// The new side, the same way.
    pub new: PathBuf,
    /// The statistic whose change is judged: p50, p90, p99 or mean.
    #[arg(long, default_value = "p50")]
    pub stat: Stat,
    /// The change above which a significant one is a regression.
    #[arg(long, default_value = "5%", value_parser = percentage)]
    pub threshold: f64,
    /// The chance of any false alarm among the names, when nothing
    /// changed (the rank test's level, Holm-corrected).
    #[arg(long, default_value_t = 0.01, value_parser = level)]
    pub alpha: f64,
    /// Print the verdict as JSON instead of the table.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    #[command(flatten)]
    pub flags: Flags,
}

/// `5%`, `5` or `0.5%`: a fraction.
fn percentage(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%').trim();
    match number.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v / 100.0),
        _ => Err(format!("{text:?} is not a percentage (e.g. 5%)")),
    }
}

/// A test's level: above 0, below 1.
fn level(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!(
            "{text:?} is not a level between 0 and 1 (e.g. 0.01)"
        )),
    }
}

/// The traces of a side: the file, or a folder's *.tlt files in order.
pub fn traces(path: &Path) -> Result<Vec<PathBuf>, CliError> {
    if !path.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let listed = std::fs::read_dir(path).map_err(|e| CliError::File {
        path: path.into(),
        reason: e.to_string(),
    })?;
    let mut files: Vec<PathBuf> = listed
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "tlt"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(CliError::BadSettings(format!(
            "{}: a folder without a trace (*.tlt) in it",
            path.display()
        )));
    }
    Ok(files)
}

/// Reads a side as `flags` say: every trace, as far as each goes. A
/// file of which not one frame reads is not a trace: an error.
pub fn read_side(path: &Path, flags: &Flags) -> Result<Side, CliError> {
    let mut samples = verdict::samples(flags);
    for file in traces(path)? {
        let bytes = trace_file::read(&file)?;
        let seen = samples.reading().damage.len();
        let frames = samples.read_trace(&file.display().to_string(), &bytes);
        if frames == 0 {
            let first = samples.reading().damage.get(seen).cloned();
            return Err(CliError::BadTrace {
                path: file,
                reason: first.map_or("no frame".into(), |d| d),
            });
        }
    }
    Ok(samples.finish())
}

/// Runs `compare`.
pub fn run(opts: CompareOptions) -> Result<(), CliError> {
    let (base, new) = (
        read_side(&opts.base, &opts.flags)?,
        read_side(&opts.new, &opts.flags)?,
    );
    let options = Options {
        stat: opts.stat,
        threshold: opts.threshold,
        alpha: opts.alpha,
        bootstrap: Bootstrap::default(),
        ..Options::default()
    };
    let comparison = compare::compare(&base, &new, &options)
        .map_err(|e| CliError::BadSettings(e.to_string()))?;
    let written = Written {
        table: report::compare_table(&comparison),
        markdown: report::compare_markdown(&comparison),
        junit: report::compare_junit(&comparison, opts.flags.allow_damage),
    };
    let failed = comparison.regressed().then(|| {
        format!(
            "{} regression{} found",
            comparison.regressions,
            if comparison.regressions == 1 { "" } else { "s" }
        )
    });
    verdict::deliver(
        &opts.flags,
        opts.json,
        &comparison,
        written,
        failed,
        comparison.damaged(),
    )
}
