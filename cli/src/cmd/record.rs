//! `typhon-live record`: the live stream into a trace file, whole frames
//! (or, for a Perfetto trace, whole packets) only, so the file is valid
//! whenever the command is interrupted.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use typhon_live_convert::perfetto::TraceWriter;
use typhon_live_core::frame::write_raw_frame;
use typhon_live_core::{DecodeError, Frame, FrameKind, Payload, SequenceCheck};
use typhon_live_std::attach::{self, Consumer, End, Flow};

use crate::cmd::remote::{self, RemoteOptions};
use crate::error::CliError;

/// What `record` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// typhon-live's own trace file, the frames as received.
    Tlt,
    /// Perfetto's protobuf trace, packets appended as frames arrive.
    Perfetto,
}

impl Format {
    /// Perfetto for a `.pftrace` or `.perfetto-trace` file, else `.tlt`.
    pub fn for_path(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some("pftrace" | "perfetto-trace") => Format::Perfetto,
            _ => Format::Tlt,
        }
    }
}

struct Recorder<'p> {
    path: &'p Path,
    file: BufWriter<File>,
    out: Vec<u8>,
    /// Set when writing Perfetto packets rather than frames.
    perfetto: Option<TraceWriter>,
    bytes: u64,
    frames: u64,
    gaps: u64,
    sequence: SequenceCheck,
    damage: u64,
    /// Whole frames that break a rule of the format (a count over its
    /// bound, say): kept in the file as received, so that it stays the
    /// stream, and told; the first one's reason.
    refused: u64,
    first_refusal: Option<String>,
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
        let refused = if self.refused > 0 {
            format!(", {} refused", self.refused)
        } else {
            String::new()
        };
        eprint!(
            "\rrecorded {} bytes, {} frames, {} gaps{refused}{end}",
            self.bytes, self.frames, self.gaps
        );
    }
}

impl Recorder<'_> {
    /// `frame` into `out`, as the file takes it; the bytes to write.
    fn encode(&mut self, frame: &Frame<'_>) -> Option<usize> {
        if let Some(writer) = &mut self.perfetto {
            self.out.clear();
            if writer.frame(frame, &mut self.out).is_err() {
                // Said in the trace (the next packet follows a loss).
                self.damage += 1;
            }
            return Some(self.out.len());
        }
        // Re-sealed exactly as received (kind, sequence number, payload).
        let needed = frame.wire_len();
        if self.out.len() < needed {
            self.out.resize(needed, 0);
        }
        write_raw_frame(
            &mut self.out,
            frame.kind,
            frame.flags,
            frame.seq,
            frame.payload,
        )
        .ok()
    }

    /// The first `n` bytes of `out` to the file, flushed: the file always
    /// ends on a whole frame or packet.
    fn write(&mut self, n: usize) -> Result<(), CliError> {
        self.file
            .write_all(&self.out[..n])
            .and_then(|()| self.file.flush())
            .map_err(|e| CliError::File {
                path: self.path.into(),
                reason: e.to_string(),
            })
    }
}

impl Consumer for Recorder<'_> {
    fn frame(&mut self, frame: &Frame<'_>) -> Flow {
        if self.frames == 0 && self.before_init == 0 && frame.skipped > 0 {
            // The first whole frame came after bytes that were not one: a
            // serial link joined mid-stream.
            self.joined_after = Some(frame.skipped);
        }
        if self.frames == 0 && frame.kind != FrameKind::Init.to_byte() {
            self.before_init += 1;
            return Flow::Continue;
        }
        // Headers only: a Block's events are not read here.
        let parsed = frame.kind().and_then(|_| frame.parse());
        if let Err(error) = parsed {
            if !matches!(error, DecodeError::UnknownKind { .. }) {
                self.refused += 1;
                self.first_refusal
                    .get_or_insert_with(|| format!("frame seq {}: {error}", frame.seq));
            }
        }
        let Some(n) = self.encode(frame) else {
            return Flow::Continue;
        };
        if let Err(e) = self.write(n) {
            self.error = Some(e);
            return Flow::Stop;
        }
        self.bytes += n as u64;
        self.frames += 1;
        if frame.is_sequenced() {
            self.gaps += u64::from(self.sequence.sequenced(frame.seq));
        } else if let Ok(Payload::Init(init)) = parsed {
            self.gaps += u64::from(self.sequence.init(init.next_seq, init.session_id));
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
pub fn run(
    addr: &str,
    remote: &RemoteOptions,
    path: &Path,
    format: Format,
    duration: Option<Duration>,
) -> Result<(), CliError> {
    let file = File::create(path).map_err(|e| CliError::File {
        path: path.into(),
        reason: e.to_string(),
    })?;
    let deadline = duration.map(|d| Instant::now() + d);
    let Some(mut stream) = connect(addr, remote, deadline)? else {
        return Ok(());
    };
    let mut recorder = Recorder {
        path,
        file: BufWriter::new(file),
        out: vec![0u8; 1 << 16],
        perfetto: (format == Format::Perfetto).then(TraceWriter::new),
        bytes: 0,
        frames: 0,
        gaps: 0,
        sequence: SequenceCheck::new(),
        damage: 0,
        refused: 0,
        first_refusal: None,
        error: None,
        before_init: 0,
        joined_after: None,
        deadline,
        last_progress: Instant::now(),
        shutdown: false,
    };
    let end = attach::read_frames(&mut stream, &mut recorder);
    if let Some(mut writer) = recorder.perfetto.take() {
        // What it holds: spans whose root has not ended, a tick not ended.
        recorder.out.clear();
        writer.finish(&mut recorder.out);
        let n = recorder.out.len();
        if recorder.error.is_none() {
            recorder.error = recorder.write(n).err();
            recorder.bytes += n as u64;
        }
        eprintln!("wrote {}: {}", path.display(), writer.stats().summary());
    }
    let why = if recorder.shutdown {
        " (session ended)"
    } else {
        ""
    };
    recorder.progress(&format!("{why}\n"));
    if let Some(reason) = &recorder.first_refusal {
        eprintln!(
            "refused {} frames that break the format's rules (kept as received), the first: {reason}",
            recorder.refused
        );
    }
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
    ended(addr, end)
}

/// The stream of `addr` for a recording that ends at `deadline`, with
/// `remote`'s TLS and token; `None` when the time was up before the peer
/// answered (an empty recording).
pub fn connect(
    addr: &str,
    remote: &RemoteOptions,
    deadline: Option<Instant>,
) -> Result<Option<remote::Stream>, CliError> {
    let secure = remote.secure()?;
    let Some(socket) = attach::connect(addr, deadline, |_| true)? else {
        return Ok(None);
    };
    remote::open(socket, addr, secure.as_ref()).map(Some)
}

/// How a recording of `addr` ended, as the command's result.
pub fn ended(addr: &str, end: End) -> Result<(), CliError> {
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
