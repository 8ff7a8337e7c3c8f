//! `typhon-live convert`: a trace file as Perfetto's protobuf trace
//! (`--to perfetto`) or Chrome Trace Event JSON (`--to chrome`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde_json::Value;
use typhon_live_perfetto::WriterStats;

use typhon_live_cli::error::CliError;
use typhon_live_cli::formats::{chrome, perfetto, Converted};
use typhon_live_cli::source::file::{self, Damage};

/// The Chrome trace of `path`, and the damage met on the way.
pub fn to_chrome(path: &Path) -> Result<(Value, Vec<Damage>), CliError> {
    let bytes = file::read(path)?;
    let Converted {
        output,
        damage,
        frames,
    } = chrome::chrome_trace(&bytes);
    file::require_frames(path, frames, &damage)?;
    Ok((output, damage))
}

/// Writes the Perfetto trace of `path` to `output`; returns what was
/// written and lost, and the damage met on the way.
pub fn to_perfetto(path: &Path, output: &Path) -> Result<(WriterStats, Vec<Damage>), CliError> {
    let bytes = file::read(path)?;
    let file_error = |e: std::io::Error| CliError::File {
        path: output.into(),
        reason: e.to_string(),
    };
    let mut sink = BufWriter::new(File::create(output).map_err(file_error)?);
    let converted = perfetto::write_perfetto(&bytes, &mut sink)
        .and_then(|converted| sink.flush().map(|()| converted))
        .map_err(file_error)?;
    if let Err(e) = file::require_frames(path, converted.frames, &converted.damage) {
        // Not a trace: no output left behind.
        drop(sink);
        let _ = std::fs::remove_file(output);
        return Err(e);
    }
    Ok((converted.output, converted.damage))
}
