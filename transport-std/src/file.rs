//! The trace-file sink: the file reader's stream (the live stream's events,
//! none of its losses), buffered, and flushed once per exporter cycle so
//! that a crash leaves a file readable up to its last whole frame.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// A trace file that closes itself on the first write error and keeps the
/// error for `Profiler::stop` to report.
pub(crate) struct TraceFile {
    file: Option<BufWriter<File>>,
    error: Option<io::Error>,
}

impl TraceFile {
    pub(crate) fn create(path: &Path) -> io::Result<Self> {
        let file = File::create(path)?;
        Ok(TraceFile {
            file: Some(BufWriter::with_capacity(1 << 20, file)),
            error: None,
        })
    }

    pub(crate) fn is_open(&self) -> bool {
        self.file.is_some()
    }

    fn fail(&mut self, e: io::Error) {
        log::error!("typhon-live: writing the trace file failed, closing it: {e}");
        self.file = None;
        self.error = Some(e);
    }

    pub(crate) fn write(&mut self, frame: &[u8]) {
        if let Some(file) = &mut self.file {
            if let Err(e) = file.write_all(frame) {
                self.fail(e);
            }
        }
    }

    pub(crate) fn flush(&mut self) {
        if let Some(file) = &mut self.file {
            if let Err(e) = file.flush() {
                self.fail(e);
            }
        }
    }

    /// Flushes and closes; the first error met, if any.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.flush();
        self.error.map_or(Ok(()), Err)
    }
}
