//! typhon-live streams as Perfetto traces (`.pftrace`), which
//! ui.perfetto.dev and trace_processor open natively.
//!
//! [`TraceWriter`] takes the frames of a stream or a trace file in order
//! and appends Perfetto `TracePacket`s as each arrives, so that a file
//! written by appending them is a valid trace up to its last whole
//! packet. What a stream holds becomes:
//!
//! | typhon-live | Perfetto |
//! |---|---|
//! | a session (Init) | a process track: `ProcessDescriptor` with the process's pid and name; a new session id, or the same id with the clock gone back over 1 s (a device that rebooted), is a new one |
//! | a lane | a thread track: `ThreadDescriptor` with the lane's name; a lane reused under another name gets a new track |
//! | a span | a slice: `TYPE_SLICE_BEGIN` / `TYPE_SLICE_END` on its lane's track, nesting kept; its argument as the debug annotation `arg` |
//! | a poll of a task span | a slice on its lane's track, nested as a span |
//! | a task span (its end) | a slice from its creation to its close on one of the process's "tasks" tracks (at most [`MAX_TASK_TRACKS`], packed: a track's slices never overlap), with `task`, `busy_ns` and `idle_ns` |
//! | an instant | `TYPE_INSTANT` on its lane's track, with `payload` |
//! | a gauge | a counter track under the process, `counter_value` or `double_counter_value` |
//! | a lane's CPU samples (FORMAT.md, "Samples") | two counter tracks under its thread, "LANE: on CPU" and "LANE: waiting for a CPU": each interval's share, from its start |
//! | a lane's switch out and back in | a slice "off-CPU (waiting)" or "preempted" on its thread's "LANE: switches" track |
//! | the process's allocation sites (FORMAT.md, "Memory") | heap profile dumps (`ProfilePacket`, as heapprofd writes them, on a sequence of their own): every site's cumulative totals, at most once a second of the stream and at its end; and the process's live bytes on a counter track "memory live" |
//! | a tick | a slice `tick` (or `overrun tick`) on the process's "Ticks" track, with `tick` and `overrun` |
//! | a sequence gap, a Block's drop counts, a damaged frame | `previous_packet_dropped` on the next packet, a "data lost" instant on the process track, and the counters "frames lost" and "events lost" |
//!
//! Event names are interned (`InternedData.event_names`, iid = name id +
//! 1): the first packet, the first after every Init, and the first after
//! a loss carry `SEQ_INCREMENTAL_STATE_CLEARED`; every track event carries
//! `SEQ_NEEDS_INCREMENTAL_STATE`. Times are ns from the stream's clock
//! (its ticks at its `ticks_per_second`).
//!
//! Spans arrive as they end, children first; a lane's spans are held
//! until their root span ends and written then in nesting order (see
//! [`MAX_HELD`] for the bound), so that a reader's sort by time nests a
//! parent and a child that begin on the same tick the right way round.
//!
//! The messages are prost structs transcribing the part of Perfetto's
//! schema we write ([`proto`]); the tests decode the output with types
//! that protoc generates from Perfetto's own `.proto` files.

mod heap;
mod nesting;
pub mod proto;
mod sequence;
mod writer;

use std::io::Write;

use crate::Converted;

pub use sequence::SEQUENCE_ID;
pub use writer::{
    TraceWriter, WriterStats, MAX_COUNTERS, MAX_HELD, MAX_HELD_FIELDS, MAX_LANES, MAX_TASK_TRACKS,
    SUBSTITUTE_PID,
};

/// Writes the Perfetto trace of a trace file's `bytes` to `sink`, the
/// packets of each frame as it is read; what was written and lost. An
/// error is `sink`'s.
pub fn write_perfetto(
    bytes: &[u8],
    sink: &mut impl Write,
) -> std::io::Result<Converted<WriterStats>> {
    let mut writer = TraceWriter::new();
    let (mut out, mut written, mut frames) = (Vec::new(), Ok(()), 0u64);
    let damage = typhon_live_reader::frames(bytes, |frame| {
        frames += 1;
        let result = writer.frame(frame, &mut out);
        if written.is_ok() {
            written = sink.write_all(&out);
        }
        out.clear();
        result
    });
    writer.finish(&mut out);
    written.and_then(|()| sink.write_all(&out))?;
    Ok(Converted {
        output: writer.stats(),
        damage,
        frames,
    })
}
