//! The one reading of a typhon-live stream.
//!
//! Every consumer of a stream (the live view's model, `inspect`, the
//! Chrome and Perfetto converters, the relay, the browser viewer) must
//! read it alike: an Init's names, lanes and clock; Definitions that add
//! names and replace the lane table; ticks in ns, placed on the Unix
//! clock; a new session, a reconnect, a restart under the same id;
//! joining mid-stream; gaps, drop entries, damage and Shutdown totals;
//! caps that a hostile peer cannot grow past. This crate is where those
//! rules live, once (docs/FORMAT.md, "Reading a stream").
//!
//! - [`Reader`] takes the decoder's frames and hands each [`Update`] to
//!   its consumer with the [`State`] it knows as of that update.
//! - [`State::write_start`] writes that state back out as the start of a
//!   stream (Init, Catch-up) that a new reader begins from;
//!   [`State::checkpoint`] keeps what it needs besides the names, to be
//!   written later (a flight recorder's window starts).
//! - [`frames`] reads every whole frame of a byte slice (a trace file)
//!   and the [`Damage`] between them.
//! - [`owned`] reads a frame at a time into owned values, for consumers
//!   on other threads (the relay's merger, metrics and tracer).
//! - [`carry`] names what a carrier says besides the bytes (a file's
//!   end, over a WebSocket).
//! - [`Tick`]s are paired once, by lane and number, a lost half told
//!   as such ([`Update::Tick`]); [`State::open_ticks`] are those still
//!   open.
//! - A lane's switch out and its next switch in are one [`OffCpu`]
//!   slice ([`Update::OffCpu`]); [`State::off_cpu_open`] are the threads
//!   switched out now.
//! - A [`Placement`] puts a session's time on the Unix clock, or on a
//!   clock that began at a Unix time (the relay's), and back.
//! - [`Nesting`] gives a lane's spans their depths: by parent, by time
//!   where a parent was lost.
//! - [`Stacks`] holds the session's call stacks, a tree of nodes and the
//!   frames at their addresses; each sample names a node held
//!   ([`Update::StackSample`]).
//! - [`FieldOwners`] tells which span or task span a field belongs to.
//! - [`BlockBuffer`] decompresses Blocks, for the few who read events
//!   without a reader (benchmarks, the exporter's tests).
//!
//! It is `no_std` with `alloc`, reads no clock (arrival times are passed
//! in) and builds for `wasm32-unknown-unknown` and microcontrollers.
//!
//! # Example
//! ```
//! use typhon_live_core::{Decoder, Exporter, LaneKind, Lanes, Metadata, NameTable};
//! use typhon_live_reader::{Reader, Update};
//!
//! static LANES: Lanes<1, 64> = Lanes::new();
//! let mut names: NameTable<8, 64> = NameTable::new();
//! let tick = names.intern("Tick").unwrap();
//! let lane = LANES.claim(names.intern("Main").unwrap(), LaneKind::Main).unwrap();
//! let span = lane.begin(tick, 100);
//! lane.end(span, 350, None);
//!
//! let meta = Metadata { ticks_per_second: 1_000_000, process_name: "doc", ..Metadata::default() };
//! let mut scratch = [0u8; 1024];
//! let mut exporter: Exporter<'_, 1> = Exporter::new(meta, &mut scratch);
//! exporter.attach().unwrap();
//! exporter.request_drain();
//! let (mut out, mut stream) = ([0u8; 4096], Vec::new());
//! while let Some(frame) = exporter.poll(400, &LANES, &names, &mut out).unwrap() {
//!     stream.extend_from_slice(&out[..frame.len]);
//! }
//!
//! let (mut buf, mut reader, mut spans) = (vec![0u8; 1 << 16], Reader::new(), Vec::new());
//! let mut decoder = Decoder::new(&mut buf);
//! decoder.feed(&stream);
//! while let Some(frame) = decoder.next().unwrap() {
//!     reader.read(&frame, |state, update| {
//!         if let Update::Event { event, .. } = update {
//!             // Times in ns: the 1 MHz clock's 100 is 100 000 ns.
//!             spans.push((state.names().show(tick).into_owned(), event.time()));
//!         }
//!     }).unwrap();
//! }
//! assert_eq!(spans, [("Tick".to_string(), 100_000)]);
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;

mod block_buffer;
pub mod carry;
mod clock;
mod cpu;
mod field_owners;
mod frames;
mod names;
mod nesting;
mod off_cpu;
pub mod owned;
mod placement;
mod read;
mod stacks;
mod start;
mod state;
mod ticks;
mod update;

pub use block_buffer::{BlockBuffer, BlockDamage};
pub use clock::Clock;
pub use cpu::CpuInterval;
pub use field_owners::{FieldOwners, MAX_FIELDS_PER_SPAN};
pub use frames::{frames, Damage};
pub use names::{Defined, Names, MAX_NAMES, MAX_NAME_BYTES};
pub use nesting::{Nesting, Place, MAX_DEPTH};
pub use off_cpu::{OffCpu, OpenOffCpu};
pub use placement::Placement;
pub use read::Reader;
pub use stacks::{Learnt, MappedModule, Stacks, MAX_FRAME_SYMBOLS, MAX_MODULE_PATH};
pub use start::{Checkpoint, Start, START_TICKS_PER_SECOND};
pub use state::{Lane, Refused, Session, State, Tally, MAX_LANES};
pub use ticks::{OpenTick, Tick};
pub use update::{Loss, TextRecord, TotalsCheck, Update};
