//! The `no_std`, allocation-free core of typhon-live.
//!
//! Everything that touches bytes lives here, so that it embeds in
//! constrained runtimes and its decoder can be fuzzed alone:
//!
//! - [`lane`] and [`ring`]: per-thread lanes with wait-free, fixed-capacity
//!   event rings that can live in a `static`; [`names`]: string interning.
//! - [`frame`], [`init`], [`block`], [`definitions`], [`catchup`],
//!   [`shutdown`], [`text`], [`stacks`]: the wire format, encoded into caller buffers. The format
//!   is specified byte by byte in `docs/FORMAT.md`. [`codec`]: LZ4
//!   (`lz4_flex`'s block format, safe code, no allocation) over a Block's
//!   packed columns, when a writer's [`Compression`] setting says so.
//! - [`exporter`]: the sans-IO state machine that any transport drives:
//!   one event source, and a stream of its own for each reader (a trace
//!   file and a live viewer are two readers).
//! - [`decode`]: the streaming decoder for live viewers and trace files;
//!   [`sequence`]: the frames a reader missed, counted by one rule.
//!
//! The core never reads a clock: the host passes timestamps in its own
//! ticks and states their frequency in the Init frame.
//!
//! # Example
//! Record on a lane, export, and read the stream back:
//! ```
//! use typhon_live_core::{Decoder, Exporter, LaneKind, Lanes, Metadata, NameTable, Payload};
//!
//! static LANES: Lanes<4, 1024> = Lanes::new(); // 4 threads, 1024 events each
//! let mut names: NameTable<64, 1024> = NameTable::new();
//! let tick = names.intern("Tick").unwrap();
//! let lane = LANES.claim(names.intern("Main").unwrap(), LaneKind::Main).unwrap();
//!
//! let span = lane.begin(tick, 100); // wait-free, no allocation
//! lane.end(span, 350, None);
//!
//! let meta = Metadata { ticks_per_second: 1_000_000, process_name: "doc", ..Metadata::default() };
//! let mut scratch = [0u8; 4096]; // one Block's events
//! let mut exporter: Exporter<'_, 4> = Exporter::new(meta, &mut scratch);
//! let viewer = exporter.attach().unwrap(); // a viewer connected: its own stream
//! exporter.request_drain();
//! let (mut out, mut stream) = ([0u8; 8192], Vec::new());
//! while let Some(frame) = exporter.poll(400, &LANES, &names, &mut out).unwrap() {
//!     // A transport sends out[..frame.len] to frame.reader, or calls
//!     // exporter.frame_dropped().
//!     assert_eq!(frame.reader, viewer);
//!     stream.extend_from_slice(&out[..frame.len]);
//! }
//!
//! let mut buf = vec![0u8; 1 << 16];
//! let mut decoder = Decoder::new(&mut buf);
//! decoder.feed(&stream);
//! let mut events = Vec::new();
//! while let Some(frame) = decoder.next().unwrap() {
//!     if let Payload::Block(block) = frame.parse().unwrap() {
//!         events.extend(block.events().unwrap().map(Result::unwrap));
//!     }
//! }
//! assert_eq!(events.len(), 1); // the span, on lane 0
//! ```
//!
//! # Features
//! | feature | effect | cost |
//! |---|---|---|
//! | *(none)* | silent: no logging at all | nothing |
//! | `log` | logs through the `log` crate | `log` dependency |
//! | `defmt` | logs through `defmt`, and derives `defmt::Format` on public types | `defmt` dependency; needs a defmt logger to link |
//! | `std` | picks the frame checksum's CPU instructions at run time (about 10x faster) | links std |
//! | `embedded-io` | `io`: the exporter's frames into any `embedded_io::Write`, frames out of any `embedded_io::Read` | `embedded-io` dependency |
//!
//! `log` and `defmt` are exclusive. Logging goes through the `defmt-or-log`
//! crate's macros (the embassy `fmt.rs` pattern, packaged), with default
//! features off so that "neither" stays a valid, silent build.
//!
//! Dependencies that are always on: `lz4_flex` (block format only, with
//! `safe-encode`, `safe-decode` and `checked-decode`, no `alloc`) and
//! `heapless` (the name table's storage). LZ4's compressor is linked even
//! when compression stays `Off`, since the setting is a run-time choice:
//! 2.6 KiB of flash on a Cortex-M4 (`examples/embedded`).
//!
//! # Panics
//! No function panics on any input read from bytes. `unsafe` is forbidden.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(all(feature = "log", feature = "defmt"))]
compile_error!("features `log` and `defmt` are exclusive: enable one of them, or neither");

mod column;
mod cursor;
mod section;

pub mod block;
pub mod catchup;
pub mod codec;
pub mod decode;
pub mod definitions;
pub mod error;
pub mod event;
pub mod exporter;
pub mod frame;
pub mod init;
#[cfg(feature = "embedded-io")]
pub mod io;
pub mod lane;
pub mod modules;
pub mod names;
pub mod restart;
pub mod ring;
pub mod samples;
pub mod sequence;
pub mod shutdown;
pub mod stacks;
pub mod text;

pub use block::{BlockBuilder, BlockEvents, BlockView, MAX_BLOCK_RECORDS};
pub use catchup::{CatchUpLane, CatchUpView, OpenLane};
pub use codec::{Codec, Compression, Lz4Table};
pub use decode::{Decoder, Frame, Payload, DEFAULT_MAX_FRAME};
pub use definitions::DefinitionsView;
pub use error::{DecodeError, EncodeError};
pub use event::{
    Event, EventKinds, FieldOwner, FieldValue, GaugeValue, LaneId, LaneKind, NameId, OpenSpan,
    SpanId, TaskId,
};
pub use exporter::{Emitted, Exporter, ReaderId, Totals};
pub use frame::FrameKind;
pub use init::{InitView, Metadata, FORMAT_VERSION, OLDEST_READ_VERSION};
pub use lane::{LaneHandle, LaneInfo, Lanes, SpanToken, DEFAULT_RING_EVENTS, MAX_OPEN_SPANS};
pub use modules::{Module, Modules};
pub use names::{NameError, NameSource, NameTable};
pub use restart::RestartCheck;
pub use ring::EventRing;
pub use samples::{
    max_samples_frame_len, Counters, LaneSample, Memory, SamplesBatch, SamplesView, SiteSample,
    SiteTotals, SiteView, StackFrames, Switch, SwitchRecord,
};
pub use section::{Entries, LaneTable, Names};
pub use sequence::SequenceCheck;
pub use shutdown::Shutdown;
pub use stacks::{
    FrameSymbol, FrameSymbolView, FrameSymbols, NodeId, StackNode, StackNodes, StackSample,
    Unwinding,
};
pub use text::{Level, Text, TextBatch, TextsView, MAX_TEXTS_PER_FRAME, MAX_TEXT_BYTES};
