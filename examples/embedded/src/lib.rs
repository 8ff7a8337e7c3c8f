//! The firmware's telemetry, target-independent: what the main loop and the
//! interrupt record, and the exporter pumped into an [`embedded_io::Write`].
//! `src/main.rs` runs it on a Cortex-M4 (thumbv7em-none-eabihf) with the
//! SysTick interrupt, writing either into a UART through [`link`]'s queue
//! (the `mps2-an386` board, which QEMU runs) or into the ITM's stimulus
//! port; the host test `tests/tests/embedded.rs` runs the same code over
//! an in-memory writer and decodes what it wrote.
//!
//! Memory is fixed at compile time: two rings of [`RING_EVENTS`] events in
//! a `static`, a name table, one Block's scratch and one frame buffer.
//!
//! The rates: [`PASSES_PER_SECOND`] passes of the main loop, each a tick
//! of six events (its start and end, three spans, a gauge) and every
//! [`LINK_GAUGE_EVERY`]th also the link's three gauges, and one sample per
//! [`SAMPLE_EVERY`] interrupts of a 1 kHz SysTick: about 730 events/s.
//! The lanes are drained every [`DRAIN_INTERVAL`], one Block each time:
//! a Block's lane groups and header are paid 20 times a second, not at
//! every pass.
//!
//! Blocks go out packed, without LZ4: a pump drains a few dozen events, in
//! which LZ4 finds little to repeat, and compressing would cost a 16 KiB
//! table and a [`WORK_LEN`]-byte buffer of RAM. [`Telemetry::compressed`]
//! (the firmware's `lz4` feature) turns `Auto` on; docs/EMBEDDED.md states the
//! footprint both ways. [`WORK_LEN`] says why its buffer is not sized for
//! the worst case, which `typhon_live_core::block::encoding_buffer_len`
//! gives.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod link;

use typhon_live_core::block::{block_scratch_len, max_block_frame_len};
use typhon_live_core::io::{pump, PumpError};
use typhon_live_core::{
    Compression, Exporter, LaneHandle, Lanes, Lz4Table, Metadata, NameId, NameTable, ReaderId,
};

/// Lanes: the main loop and the interrupt handler.
pub const LANES: usize = 2;
/// Events each lane's ring holds between two pumps (40 bytes each).
pub const RING_EVENTS: usize = 128;
/// The lanes, for a `static`.
pub type FirmwareLanes = Lanes<LANES, RING_EVENTS>;
/// A lane of [`FirmwareLanes`].
pub type Lane<'a> = LaneHandle<'a, RING_EVENTS>;
/// Scratch bytes of one Block: up to 64 events.
pub const SCRATCH_LEN: usize = block_scratch_len(64);
/// Output buffer: the largest Block, and room for the Init (names included).
/// `Auto` never writes a Block larger than its packed form, so this holds
/// compressed Blocks too.
pub const OUT_LEN: usize = max(max_block_frame_len(SCRATCH_LEN, LANES), 1024);
/// The encoding buffer of [`Telemetry::compressed`]: a Block's packed
/// events and room to compress them. Sized for a typical pump's Block (a
/// few dozen events, well under 900 packed bytes), not the worst case
/// (`encoding_buffer_len` gives 11.6 KiB for [`SCRATCH_LEN`]): a larger
/// Block goes out packed, as the exporter does when the buffer is short.
pub const WORK_LEN: usize = 2048;
/// Ticks of the firmware's clock per second: microseconds.
pub const TICKS_PER_SECOND: u64 = 1_000_000;
/// The interrupt records a sample every this many interrupts.
pub const SAMPLE_EVERY: u32 = 10;
/// Passes of the main loop (ticks) per second.
pub const PASSES_PER_SECOND: u32 = 100;
/// The link's gauges are recorded every this many passes.
pub const LINK_GAUGE_EVERY: u64 = 10;
/// The lanes are drained into a Block this often: 50 ms of the clock, five
/// passes (about 40 events, well within [`SCRATCH_LEN`] and the rings).
pub const DRAIN_INTERVAL: u64 = TICKS_PER_SECOND / 20;
/// A serial link has no "reader connected" event, and a reader that starts
/// late would never see the Init with the names: the telemetry announces
/// itself again (a fresh Init, names and lanes) every this many ticks.
pub const ANNOUNCE_EVERY: u64 = 2 * TICKS_PER_SECOND;

const fn max(a: usize, b: usize) -> usize {
    if a > b {
        a
    } else {
        b
    }
}

/// The name table: a few names, a few hundred bytes.
pub type Names = NameTable<16, 256>;

/// Ids of everything the firmware records.
#[derive(Clone, Copy, Debug)]
pub struct Ids {
    /// The main loop's lane.
    pub main: NameId,
    /// The interrupt's lane.
    pub interrupt: NameId,
    /// One pass of the main loop.
    pub control_loop: NameId,
    /// Reading the sensors, inside a pass.
    pub sense: NameId,
    /// Computing the output, inside a pass.
    pub control: NameId,
    /// The interrupt's sample, an instant.
    pub sample: NameId,
    /// Queue depth, a gauge.
    pub queue: NameId,
    /// Bytes waiting for the link, a gauge.
    pub link_backlog: NameId,
    /// Frames the link refused (it was behind), a gauge.
    pub link_refused: NameId,
    /// The link's write errors (a UART's transmit overruns), a gauge.
    pub link_errors: NameId,
}

impl Ids {
    /// Interns every name; `None` if the table is too small.
    pub fn intern(names: &mut Names) -> Option<Ids> {
        let mut id = |name: &str| names.intern(name).ok();
        Some(Ids {
            main: id("main loop")?,
            interrupt: id("SysTick")?,
            control_loop: id("control loop")?,
            sense: id("sense")?,
            control: id("control")?,
            sample: id("adc.sample")?,
            queue: id("queue.depth")?,
            link_backlog: id("link.backlog")?,
            link_refused: id("link.refused")?,
            link_errors: id("link.errors")?,
        })
    }
}

/// What the firmware describes itself as.
pub fn metadata() -> Metadata<'static> {
    Metadata {
        ticks_per_second: TICKS_PER_SECOND,
        process_name: "typhon-live embedded example",
        ..Metadata::default()
    }
}

/// One pass of the main loop, recorded on `lane`: a span with two nested
/// spans and a gauge. `now` reads the clock; `work` stands in for the
/// application's code.
pub fn main_loop_pass(
    lane: &Lane<'_>,
    ids: &Ids,
    pass: u64,
    now: &impl Fn() -> u64,
    work: &mut impl FnMut(u32),
) {
    lane.tick_start(pass, now());
    let outer = lane.begin(ids.control_loop, now());
    let sense = lane.begin(ids.sense, now());
    work(200);
    lane.end(sense, now(), None);
    let control = lane.begin(ids.control, now());
    work(300);
    lane.end(control, now(), Some(pass % 7));
    lane.end(outer, now(), None);
    lane.gauge(
        ids.queue,
        now(),
        typhon_live_core::GaugeValue::Int((pass % 5) as i64),
    );
    lane.tick_end(pass, now(), false);
}

/// What the link reports about itself, recorded as gauges by
/// [`LinkGauges`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Bytes queued and not yet sent.
    pub backlog: u32,
    /// Frames refused because the link was behind, since start.
    pub refused: u32,
    /// Write errors of the device, since start.
    pub errors: u32,
}

/// Records the link's state as gauges: at once when a frame was refused or
/// a write failed (the count is then in the next Block that gets
/// through), and every [`LINK_GAUGE_EVERY`]th pass otherwise, so that a
/// reading lost with a refused Block is sent again.
#[derive(Debug, Default)]
pub struct LinkGauges {
    last: LinkStats,
}

impl LinkGauges {
    /// Gauges that have recorded nothing yet.
    pub const fn new() -> Self {
        LinkGauges {
            last: LinkStats {
                backlog: 0,
                refused: 0,
                errors: 0,
            },
        }
    }

    /// Records `stats` on `lane` at pass `pass` if it is due (three
    /// gauges); whether it was.
    pub fn record(
        &mut self,
        lane: &Lane<'_>,
        ids: &Ids,
        pass: u64,
        now: u64,
        stats: LinkStats,
    ) -> bool {
        let news = stats.refused != self.last.refused || stats.errors != self.last.errors;
        if !news && pass % LINK_GAUGE_EVERY != 0 {
            return false;
        }
        self.last = stats;
        let int = |v: u32| typhon_live_core::GaugeValue::Int(i64::from(v));
        lane.gauge(ids.link_backlog, now, int(stats.backlog));
        lane.gauge(ids.link_refused, now, int(stats.refused));
        lane.gauge(ids.link_errors, now, int(stats.errors));
        true
    }
}

/// The interrupt handler's part: every [`SAMPLE_EVERY`]th interrupt
/// records `sample` as an instant.
pub fn on_interrupt(lane: &Lane<'_>, ids: &Ids, count: u32, now: u64, sample: u64) {
    if count % SAMPLE_EVERY == 0 {
        lane.instant(ids.sample, now, sample);
    }
}

/// The exporter and its buffers.
pub struct Telemetry<'a> {
    exporter: Exporter<'a, LANES>,
    /// The one reader: whoever listens on the link.
    link: ReaderId,
    out: &'a mut [u8],
    /// Tick of the last Init.
    announced: u64,
    /// Tick of the last drain request.
    drained: Option<u64>,
}

impl<'a> Telemetry<'a> {
    /// An exporter writing from the start: a serial link has no
    /// connection to wait for, so the Init goes out first thing. The
    /// Catch-up schedule comes from the clock: one per
    /// [`TICKS_PER_SECOND`]; the Init is repeated every [`ANNOUNCE_EVERY`].
    pub fn new(scratch: &'a mut [u8], out: &'a mut [u8]) -> Self {
        let mut exporter = Exporter::new(metadata(), scratch);
        // A one-reader exporter always has its slot free.
        let link = exporter.attach().unwrap_or(ReaderId::FIRST);
        Telemetry {
            exporter,
            link,
            out,
            announced: 0,
            drained: None,
        }
    }

    /// [`Telemetry::new`] with LZ4 over each Block when it saves at least
    /// 1/16 (`Compression::Auto`), using `work` ([`WORK_LEN`] bytes) and
    /// `table`.
    pub fn compressed(
        scratch: &'a mut [u8],
        out: &'a mut [u8],
        work: &'a mut [u8],
        table: &'a mut Lz4Table,
    ) -> Self {
        let mut telemetry = Telemetry::new(scratch, out);
        telemetry.exporter.set_encoding_buffer(work);
        telemetry.exporter.set_compression(Compression::Auto, table);
        telemetry
    }

    /// Writes whatever frames are due whole to `writer`: the repeated
    /// Init, a Catch-up, and every [`DRAIN_INTERVAL`] a Block of what the
    /// lanes recorded since the last.
    pub fn pump<W: embedded_io::Write>(
        &mut self,
        now: u64,
        lanes: &FirmwareLanes,
        names: &Names,
        writer: &mut W,
    ) -> Result<u32, PumpError<W::Error>> {
        if now.saturating_sub(self.announced) >= ANNOUNCE_EVERY {
            // As if a reader had just connected: Init, then the stream.
            self.exporter.restart(self.link);
            self.announced = now;
        }
        if self
            .drained
            .is_none_or(|at| now.saturating_sub(at) >= DRAIN_INTERVAL)
        {
            self.exporter.request_drain();
            self.drained = Some(now);
        }
        pump(&mut self.exporter, now, lanes, names, self.out, writer)
    }
}
