//! `typhon-live record`: the live stream into a trace file, whole frames
//! only, so the file is valid whenever the command is interrupted.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use typhon_live_core::frame::write_raw_frame;
use typhon_live_core::{DecodeError, Frame, FrameKind};

use typhon_live_cli::error::CliError;
use typhon_live_cli::source::live::{self, Consumer, End, Flow};

struct Recorder<'p> {
    path: &'p Path,
    file: BufWriter<File>,
    out: Vec<u8>,
    bytes: u64,
    frames: u64,
    gaps: u64,
    expected: Option<u32>,
    damage: u64,
    error: Option<CliError>,
    /// Frames before the first Init, not written: a file starts with one,
    /// so that every name in it resolves (a serial link joined
    /// mid-stream sends Blocks before its next Init).
    before_init: u64,
    /// Bytes skipped before the first whole frame.
    joined_after: Option<u64>,
    deadline: Option<Instant>,
    last_progress: Instant,
    shutdown: bool,
}

impl Recorder<'_> {
    fn progress(&self, end: &str) {
        if self.frames == 0 && self.before_init > 0 {
            eprint!(
                "\rwaiting for an Init: {} frames before it skipped{end}",
                self.before_init
            );
            return;
        }
        eprint!(
            "\rrecorded {} bytes, {} frames, {} gaps{end}",
            self.bytes, self.frames, self.gaps
        );
    }
}

impl Consumer for Recorder<'_> {
    fn frame(&mut self, frame: &Frame<'_>) -> Flow {
        if self.frames == 0 && frame.kind != FrameKind::Init.to_byte() {
            self.before_init += 1;
            return Flow::Continue;
        }
        // Re-sealed exactly as received (kind, sequence number, payload).
        let needed = frame.wire_len();
        if self.out.len() < needed {
            self.out.resize(needed, 0);
        }
        let Ok(n) = write_raw_frame(
            &mut self.out,
            frame.kind,
            frame.flags,
            frame.seq,
            frame.payload,
        ) else {
            return Flow::Continue;
        };
        if let Err(e) = self
            .file
            .write_all(&self.out[..n])
            .and_then(|()| self.file.flush())
        {
            self.error = Some(CliError::File {
                path: self.path.into(),
                reason: e.to_string(),
            });
            return Flow::Stop;
        }
        self.bytes += n as u64;
        self.frames += 1;
        if frame.kind != FrameKind::Init.to_byte() {
            if let Some(expected) = self.expected {
                self.gaps += u64::from(frame.seq.wrapping_sub(expected));
            }
            self.expected = Some(frame.seq.wrapping_add(1));
        } else {
            self.expected = Some(frame.seq);
        }
        if frame.kind == FrameKind::Shutdown.to_byte() {
            self.shutdown = true;
            return Flow::Stop;
        }
        Flow::Continue
    }

    fn damage(&mut self, _error: DecodeError) {
        self.damage += 1;
    }

    fn joined_mid_stream(&mut self, skipped: u64) {
        self.joined_after = Some(skipped);
    }

    fn tick(&mut self) -> Flow {
        if self.last_progress.elapsed() >= Duration::from_secs(1) {
            self.last_progress = Instant::now();
            self.progress("");
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Flow::Stop;
        }
        Flow::Continue
    }
}

/// Records `addr` into `path` until Shutdown, `duration`, or interruption.
pub fn run(addr: &str, path: &Path, duration: Option<Duration>) -> Result<(), CliError> {
    let file = File::create(path).map_err(|e| CliError::File {
        path: path.into(),
        reason: e.to_string(),
    })?;
    let deadline = duration.map(|d| Instant::now() + d);
    let Some(mut stream) = live::connect(addr, deadline, |_| true)? else {
        // Time was up before the peer answered: an empty recording.
        return Ok(());
    };
    let mut recorder = Recorder {
        path,
        file: BufWriter::new(file),
        out: vec![0u8; 1 << 16],
        bytes: 0,
        frames: 0,
        gaps: 0,
        expected: None,
        damage: 0,
        error: None,
        before_init: 0,
        joined_after: None,
        deadline,
        last_progress: Instant::now(),
        shutdown: false,
    };
    let end = live::read_frames(&mut stream, &mut recorder);
    let why = if recorder.shutdown {
        " (session ended)"
    } else {
        ""
    };
    recorder.progress(&format!("{why}\n"));
    if let Some(skipped) = recorder.joined_after {
        eprintln!(
            "joined mid-stream: {skipped} bytes skipped to the first whole frame, \
             then {} frames until the first Init",
            recorder.before_init
        );
    }
    if let Some(error) = recorder.error {
        return Err(error);
    }
    match end {
        End::Done => Ok(()),
        End::NotTyphon(reason) => Err(CliError::NotTyphon {
            addr: addr.into(),
            reason,
        }),
        End::Lost(reason) => Err(CliError::ConnectionLost {
            addr: addr.into(),
            reason,
        }),
    }
}
