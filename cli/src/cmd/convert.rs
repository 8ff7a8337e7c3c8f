//! `typhon-live convert`: a trace file as Perfetto's protobuf trace
//! (`--to perfetto`) or Chrome Trace Event JSON (`--to chrome`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde_json::Value;
use typhon_live_convert::perfetto::{self, WriterStats};
use typhon_live_convert::{chrome, Converted};
use typhon_live_reader::Damage;

use crate::error::CliError;
use crate::trace_file;

/// What `convert` writes.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Format {
    /// Perfetto's protobuf trace, .pftrace (ui.perfetto.dev,
    /// trace_processor).
    Perfetto,
    /// Chrome Trace Event JSON (ui.perfetto.dev, chrome://tracing).
    Chrome,
}

/// Writes `path` as `to` to `output`; a damaged input is an error after
/// it (the rest of it was converted).
pub fn run(path: &Path, to: Format, output: &Path) -> Result<(), CliError> {
    let file_error = |e: &dyn std::fmt::Display| CliError::File {
        path: output.into(),
        reason: e.to_string(),
    };
    let damage = match to {
        Format::Chrome => {
            let (json, damage) = to_chrome(path)?;
            let text = serde_json::to_string(&json).map_err(|e| file_error(&e))?;
            std::fs::write(output, text).map_err(|e| file_error(&e))?;
            damage
        }
        Format::Perfetto => {
            let (stats, damage) = to_perfetto(path, output)?;
            eprintln!("wrote {}: {}", output.display(), stats.summary());
            damage
        }
    };
    match damage.first() {
        None => Ok(()),
        Some(first) => Err(CliError::BadTrace {
            path: path.into(),
            reason: format!(
                "{} damaged places, the first at byte {}: {} (the rest was read)",
                damage.len(),
                first.offset,
                first.error
            ),
        }),
    }
}

/// The Chrome trace of `path`, and the damage met on the way.
fn to_chrome(path: &Path) -> Result<(Value, Vec<Damage>), CliError> {
    let bytes = trace_file::read(path)?;
    let Converted {
        output,
        damage,
        frames,
    } = chrome::chrome_trace(&bytes);
    trace_file::require_frames(path, frames, &damage)?;
    Ok((output, damage))
}

/// Writes the Perfetto trace of `path` to `output`; returns what was
/// written and lost, and the damage met on the way.
fn to_perfetto(path: &Path, output: &Path) -> Result<(WriterStats, Vec<Damage>), CliError> {
    let bytes = trace_file::read(path)?;
    let file_error = |e: std::io::Error| CliError::File {
        path: output.into(),
        reason: e.to_string(),
    };
    let mut sink = BufWriter::new(File::create(output).map_err(file_error)?);
    let converted = perfetto::write_perfetto(&bytes, &mut sink)
        .and_then(|converted| sink.flush().map(|()| converted))
        .map_err(file_error)?;
    if let Err(e) = trace_file::require_frames(path, converted.frames, &converted.damage) {
        // Not a trace: no output left behind.
        drop(sink);
        let _ = std::fs::remove_file(output);
        return Err(e);
    }
    Ok((converted.output, converted.damage))
}
