//! Perfetto's protobuf trace (`.pftrace`), written by
//! [`typhon_live_perfetto::TraceWriter`] packet by packet.

use std::io::Write;

use typhon_live_perfetto::{TraceWriter, WriterStats};

use super::Converted;
use crate::source::file;

/// Writes the Perfetto trace of a trace file's `bytes` to `sink`, the
/// packets of each frame as it is read; what was written and lost. An
/// error is `sink`'s.
pub fn write_perfetto(
    bytes: &[u8],
    sink: &mut impl Write,
) -> std::io::Result<Converted<WriterStats>> {
    let mut writer = TraceWriter::new();
    let (mut out, mut written, mut frames) = (Vec::new(), Ok(()), 0u64);
    let damage = file::frames(bytes, |frame| {
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

/// One line saying what a Perfetto trace got and what was lost.
pub fn summary(stats: &WriterStats) -> String {
    let mut line = format!(
        "{} packets, {} spans, {} instants, {} counter values, {} ticks",
        stats.packets, stats.spans, stats.instants, stats.counter_values, stats.ticks
    );
    if stats.frames_lost + stats.events_lost > 0 {
        line += &format!(
            "; lost {} frames ({} of them damaged) and {} events (marked in the trace)",
            stats.frames_lost, stats.damaged_frames, stats.events_lost
        );
    }
    let refused = stats.names_refused
        + stats.gauge_values_refused
        + stats.lane_events_refused
        + stats.values_not_finite;
    if refused > 0 {
        line += &format!(
            "; left out {} names, {} gauge readings and {} lane events over the caps, {} non-finite readings",
            stats.names_refused,
            stats.gauge_values_refused,
            stats.lane_events_refused,
            stats.values_not_finite
        );
    }
    line
}
