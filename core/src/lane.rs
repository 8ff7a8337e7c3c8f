//! Lanes: one per producing thread, each with its event ring and its stack
//! of open spans, claimed from a fixed table that can live in a `static`.
//!
//! A thread claims a lane and records through the returned [`LaneHandle`];
//! the exporter drains every lane through `&Lanes`. Dropping the handle
//! releases the lane, but its slot is only reused once the exporter has
//! drained what the old owner left, so no event is ever labelled with the
//! next owner's name.

use core::cell::Cell;
use core::marker::PhantomData;
use core::sync::atomic::{fence, AtomicU32, Ordering};

use crate::event::{Event, GaugeValue, LaneId, LaneKind, NameId, OpenSpan, SpanId};
use crate::ring::EventRing;

/// The ring capacity we recommend for hosted runtimes: 4096 events of 40
/// bytes, 160 KiB per lane. Drained every millisecond, a lane only drops
/// events above about 4 million a second sustained, or when the exporter
/// stalls for longer than 4096 events take to record; a 60 Hz game loop
/// with a few hundred spans per tick per thread stays two orders of
/// magnitude below. Embedded hosts pick a smaller `N` to fit their RAM.
pub const DEFAULT_RING_EVENTS: usize = 4096;

/// How many open spans per lane are tracked for live-stall reporting.
/// Deeper spans are still recorded when they end; only their open state is
/// not reported (the true depth still is).
pub const MAX_OPEN_SPANS: usize = 16;

const FREE: u32 = 0;
const CLAIMED: u32 = 1;
/// The owner has let go; the slot is freed once its ring is drained.
const RELEASED: u32 = 2;

/// The identity of a lane, as the exporter sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LaneInfo {
    /// Slot index.
    pub id: LaneId,
    /// Interned name of the lane (usually the thread name).
    pub name: NameId,
    /// What kind of thread it is.
    pub kind: LaneKind,
}

/// Spans begun and not ended, readable from another thread.
///
/// A sequence lock made of atomics, with version and depth in one word:
/// every change stores a new word (version + 1), so a reader that sees the
/// same word before and after copying the slots copied a consistent stack.
/// A push writes the slot above the current depth, behind a release fence
/// that orders the previous change's store before it, then publishes the
/// new word; a pop only publishes a new word. Two stores per push, one per
/// pop: this is on every span's path.
struct OpenStack {
    /// `version << DEPTH_BITS | depth`.
    state: AtomicU32,
    /// id, name, start low word, start high word.
    slots: [[AtomicU32; 4]; MAX_OPEN_SPANS],
}

const DEPTH_BITS: u32 = 12;
/// Depths past this saturate (the reported depth then means "at least").
const DEPTH_MAX: u32 = (1 << DEPTH_BITS) - 1;

fn pack(version: u32, depth: u32) -> u32 {
    (version << DEPTH_BITS) | depth.min(DEPTH_MAX)
}

impl OpenStack {
    const fn new() -> Self {
        OpenStack {
            state: AtomicU32::new(0),
            slots: [const { [const { AtomicU32::new(0) }; 4] }; MAX_OPEN_SPANS],
        }
    }

    fn publish(&self, old: u32, depth: u32) {
        let version = (old >> DEPTH_BITS).wrapping_add(1);
        self.state.store(pack(version, depth), Ordering::Release);
    }

    fn push(&self, span: OpenSpan) {
        let old = self.state.load(Ordering::Relaxed);
        let depth = old & DEPTH_MAX;
        if let Some(slot) = self.slots.get(depth as usize) {
            // Readers that see these stores see the previous change too.
            fence(Ordering::Release);
            slot[0].store(span.id, Ordering::Relaxed);
            slot[1].store(span.name, Ordering::Relaxed);
            slot[2].store(span.start as u32, Ordering::Relaxed);
            slot[3].store((span.start >> 32) as u32, Ordering::Relaxed);
        }
        self.publish(old, depth.saturating_add(1));
    }

    fn pop(&self) {
        let old = self.state.load(Ordering::Relaxed);
        self.publish(old, (old & DEPTH_MAX).saturating_sub(1));
    }

    fn clear(&self) {
        let old = self.state.load(Ordering::Relaxed);
        self.publish(old, 0);
    }

    /// Copies the outermost open spans into `out` and returns how many were
    /// copied and the depth; `None` if the owner kept writing.
    fn read(&self, out: &mut [OpenSpan]) -> Option<(usize, u32)> {
        for _ in 0..16 {
            let before = self.state.load(Ordering::Acquire);
            let depth = before & DEPTH_MAX;
            let mut copied = 0;
            for (dst, slot) in out.iter_mut().zip(&self.slots).take(depth as usize) {
                let lo = slot[2].load(Ordering::Relaxed);
                let hi = slot[3].load(Ordering::Relaxed);
                *dst = OpenSpan {
                    id: slot[0].load(Ordering::Relaxed),
                    name: slot[1].load(Ordering::Relaxed),
                    start: u64::from(lo) | (u64::from(hi) << 32),
                };
                copied += 1;
            }
            fence(Ordering::Acquire);
            if self.state.load(Ordering::Relaxed) == before {
                return Some((copied, depth));
            }
            core::hint::spin_loop();
        }
        None
    }
}

/// One lane slot: ring, identity and open spans.
pub struct Lane<const N: usize> {
    state: AtomicU32,
    name: AtomicU32,
    kind: AtomicU32,
    /// Owner-only: last span id handed out, and the innermost open span.
    last_span: AtomicU32,
    current: AtomicU32,
    ring: EventRing<N>,
    open: OpenStack,
}

impl<const N: usize> Lane<N> {
    const fn new() -> Self {
        Lane {
            state: AtomicU32::new(FREE),
            name: AtomicU32::new(0),
            kind: AtomicU32::new(0),
            last_span: AtomicU32::new(0),
            current: AtomicU32::new(0),
            ring: EventRing::new(),
            open: OpenStack::new(),
        }
    }
}

/// A fixed table of `L` lanes with rings of `N` events each.
///
/// `const`-constructible, so it can be a `static`; every method takes `&self`.
pub struct Lanes<const L: usize, const N: usize> {
    lanes: [Lane<N>; L],
    /// Bumped whenever a lane is claimed or freed, so the exporter knows when
    /// to send the lane table again.
    epoch: AtomicU32,
}

impl<const L: usize, const N: usize> Default for Lanes<L, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const L: usize, const N: usize> Lanes<L, N> {
    const SLOTS_OK: () = assert!(L <= u16::MAX as usize, "at most 65535 lanes");

    /// A table of free lanes.
    pub const fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::SLOTS_OK;
        Lanes {
            lanes: [const { Lane::new() }; L],
            epoch: AtomicU32::new(0),
        }
    }

    /// Number of lane slots.
    pub const fn slots(&self) -> usize {
        L
    }

    /// Every lane's ring uses `events` of its `N` slots
    /// ([`EventRing::set_capacity`](crate::EventRing::set_capacity)): a
    /// power of two from 2 to `N`, set before recording starts. Returns how
    /// many rings took it; a ring with events waiting keeps its capacity.
    pub fn set_ring_capacity(&self, events: usize) -> usize {
        self.lanes
            .iter()
            .filter(|lane| lane.ring.set_capacity(events))
            .count()
    }

    /// Claims a free lane for the calling thread; `None` when all are taken.
    pub fn claim(&self, name: NameId, kind: LaneKind) -> Option<LaneHandle<'_, N>> {
        for (index, lane) in self.lanes.iter().enumerate() {
            if lane
                .state
                .compare_exchange(FREE, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                lane.name.store(name, Ordering::Relaxed);
                lane.kind
                    .store(u32::from(kind.to_byte()), Ordering::Relaxed);
                lane.current.store(0, Ordering::Relaxed);
                lane.open.clear();
                self.epoch.fetch_add(1, Ordering::Release);
                return Some(LaneHandle {
                    lane,
                    id: index as LaneId,
                    epoch: &self.epoch,
                    _not_sync: PhantomData,
                });
            }
        }
        None
    }

    /// Changes whenever the set of lanes changes.
    pub fn epoch(&self) -> u32 {
        self.epoch.load(Ordering::Acquire)
    }

    /// The lane in slot `id`, if claimed (or released but not yet drained).
    pub fn info(&self, id: LaneId) -> Option<LaneInfo> {
        let lane = self.lanes.get(usize::from(id))?;
        if lane.state.load(Ordering::Acquire) == FREE {
            return None;
        }
        Some(LaneInfo {
            id,
            name: lane.name.load(Ordering::Relaxed),
            kind: LaneKind::from_byte(lane.kind.load(Ordering::Relaxed) as u8),
        })
    }

    /// Every lane that is claimed or still holds a departed owner's events.
    pub fn iter(&self) -> impl Iterator<Item = LaneInfo> + '_ {
        (0..L).filter_map(|id| self.info(id as LaneId))
    }

    /// Consumer side: events waiting in lane `id`.
    pub fn pending(&self, id: LaneId) -> usize {
        self.lanes.get(usize::from(id)).map_or(0, |l| l.ring.len())
    }

    /// Consumer side: the oldest event of lane `id`.
    pub fn pop(&self, id: LaneId) -> Option<Event> {
        self.lanes.get(usize::from(id))?.ring.pop()
    }

    /// Consumer side: up to `max` events of lane `id` to `take`, oldest
    /// first, until `take` refuses one; see
    /// [`EventRing::drain`](crate::ring::EventRing::drain).
    pub fn drain(&self, id: LaneId, max: usize, take: impl FnMut(Event) -> bool) -> usize {
        self.lanes
            .get(usize::from(id))
            .map_or(0, |l| l.ring.drain(max, take))
    }

    /// Consumer side: events lane `id` refused since the last call.
    pub fn take_dropped(&self, id: LaneId) -> u32 {
        self.lanes
            .get(usize::from(id))
            .map_or(0, |l| l.ring.take_dropped())
    }

    /// The open spans of lane `id`, outermost first, copied into `out`.
    /// Returns the number copied and the depth (which may exceed
    /// [`MAX_OPEN_SPANS`]; depths past 4095 read as 4095), or `None` if the
    /// lane is free or its owner kept changing the stack while it was read.
    pub fn open_spans(&self, id: LaneId, out: &mut [OpenSpan]) -> Option<(usize, u32)> {
        let lane = self.lanes.get(usize::from(id))?;
        if lane.state.load(Ordering::Acquire) != CLAIMED {
            return None;
        }
        lane.open.read(out)
    }

    /// Consumer side: frees lane `id` if its owner is gone and its ring is
    /// empty. Call between Blocks, never while building one (see the module
    /// docs). Returns whether the lane was freed.
    pub fn retire_if_drained(&self, id: LaneId) -> bool {
        let Some(lane) = self.lanes.get(usize::from(id)) else {
            return false;
        };
        if lane.state.load(Ordering::Acquire) == RELEASED && lane.ring.is_empty() {
            lane.state.store(FREE, Ordering::Release);
            self.epoch.fetch_add(1, Ordering::Release);
            return true;
        }
        false
    }
}

/// Proof that a span was begun; hand it back to [`LaneHandle::end`].
#[must_use = "a span that is never ended is reported open forever"]
#[derive(Debug)]
pub struct SpanToken {
    id: SpanId,
    parent: SpanId,
    name: NameId,
    start: u64,
}

impl SpanToken {
    /// The span's id within its lane.
    pub fn id(&self) -> SpanId {
        self.id
    }
}

/// A claimed lane, owned by one thread: the producer end of its ring.
///
/// Not `Sync`, so two threads cannot record through the same handle at once.
/// Dropping it releases the lane.
///
/// ```compile_fail
/// fn shared_between_threads<T: Sync>() {}
/// shared_between_threads::<typhon_live_core::LaneHandle<'static, 8>>();
/// ```
pub struct LaneHandle<'a, const N: usize> {
    lane: &'a Lane<N>,
    id: LaneId,
    epoch: &'a AtomicU32,
    _not_sync: PhantomData<Cell<()>>,
}

impl<const N: usize> LaneHandle<'_, N> {
    /// The lane's slot index.
    pub fn id(&self) -> LaneId {
        self.id
    }

    /// Records `event` as is; `false` if the ring was full and it was dropped.
    #[inline]
    pub fn record(&self, event: &Event) -> bool {
        self.lane.ring.push(event)
    }

    /// Whether the lane's ring just passed half full
    /// ([`EventRing::passed_half`](crate::EventRing::passed_half)): call
    /// after recording, to wake the exporter early.
    #[inline]
    pub fn passed_half(&self) -> bool {
        self.lane.ring.passed_half()
    }

    /// Begins a span named `name` at tick `now`; it is reported open until
    /// [`LaneHandle::end`].
    #[inline]
    pub fn begin(&self, name: NameId, now: u64) -> SpanToken {
        let mut id = self.lane.last_span.load(Ordering::Relaxed).wrapping_add(1);
        if id == 0 {
            id = 1;
        }
        self.lane.last_span.store(id, Ordering::Relaxed);
        // Owner-only fields: a load and a store, not a (locked) swap.
        let parent = self.lane.current.load(Ordering::Relaxed);
        self.lane.current.store(id, Ordering::Relaxed);
        self.lane.open.push(OpenSpan {
            id,
            name,
            start: now,
        });
        SpanToken {
            id,
            parent,
            name,
            start: now,
        }
    }

    /// Ends a span at tick `now` and records it whole; `false` if dropped.
    #[inline]
    pub fn end(&self, token: SpanToken, now: u64, arg: Option<u64>) -> bool {
        self.record(&self.close(token, now, arg))
    }

    /// Ends a span at tick `now` without recording it: its record, for the
    /// caller to record on this lane later, as a span or as the
    /// [`Event::Poll`] of a task. The `tracing` layer decides which only
    /// when the span closes or is entered again.
    #[inline]
    pub fn close(&self, token: SpanToken, now: u64, arg: Option<u64>) -> Event {
        self.lane.current.store(token.parent, Ordering::Relaxed);
        self.lane.open.pop();
        Event::Span {
            start: token.start,
            duration: now.saturating_sub(token.start),
            name: token.name,
            id: token.id,
            parent: token.parent,
            arg,
        }
    }

    /// Records a point event.
    #[inline]
    pub fn instant(&self, name: NameId, now: u64, payload: u64) -> bool {
        self.record(&Event::Instant {
            time: now,
            name,
            payload,
        })
    }

    /// Records a gauge reading.
    #[inline]
    pub fn gauge(&self, gauge: NameId, now: u64, value: GaugeValue) -> bool {
        self.record(&Event::Gauge {
            time: now,
            gauge,
            value,
        })
    }

    /// Records the start of simulation tick `tick`.
    #[inline]
    pub fn tick_start(&self, tick: u64, now: u64) -> bool {
        self.record(&Event::TickStart { time: now, tick })
    }

    /// Records the end of simulation tick `tick`.
    #[inline]
    pub fn tick_end(&self, tick: u64, now: u64, overrun: bool) -> bool {
        self.record(&Event::TickEnd {
            time: now,
            tick,
            overrun,
        })
    }
}

impl<const N: usize> Drop for LaneHandle<'_, N> {
    fn drop(&mut self) {
        self.lane.open.clear();
        self.lane.state.store(RELEASED, Ordering::Release);
        self.epoch.fetch_add(1, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;

    #[test]
    fn claims_until_full_and_reuses_only_drained_slots() {
        let lanes = Lanes::<2, 4>::new();
        let a = lanes.claim(1, LaneKind::Main).unwrap();
        let b = lanes.claim(2, LaneKind::Worker).unwrap();
        assert!(lanes.claim(3, LaneKind::Pool).is_none());
        assert_eq!((a.id(), b.id()), (0, 1));
        assert!(a.instant(5, 10, 0));
        drop(a);
        // Released but not drained: still listed, not reusable.
        assert_eq!(lanes.info(0).map(|i| i.name), Some(1));
        assert!(!lanes.retire_if_drained(0));
        assert!(lanes.claim(3, LaneKind::Pool).is_none());
        assert!(lanes.pop(0).is_some());
        assert!(lanes.retire_if_drained(0));
        assert_eq!(lanes.info(0), None);
        let c = lanes.claim(3, LaneKind::Pool).unwrap();
        assert_eq!(c.id(), 0);
        assert_eq!(
            lanes.info(0),
            Some(LaneInfo {
                id: 0,
                name: 3,
                kind: LaneKind::Pool
            })
        );
    }

    #[test]
    fn nested_spans_link_parents_and_report_open_ones() {
        let lanes = Lanes::<1, 16>::new();
        let lane = lanes.claim(0, LaneKind::Main).unwrap();
        let outer = lane.begin(10, 100);
        let inner = lane.begin(11, 150);
        let mut open = [OpenSpan::default(); 4];
        assert_eq!(lanes.open_spans(0, &mut open), Some((2, 2)));
        assert_eq!(
            open[..2],
            [
                OpenSpan {
                    id: 1,
                    name: 10,
                    start: 100
                },
                OpenSpan {
                    id: 2,
                    name: 11,
                    start: 150
                }
            ]
        );
        assert!(lane.end(inner, 170, Some(3)));
        assert!(lane.end(outer, 200, None));
        assert_eq!(lanes.open_spans(0, &mut open), Some((0, 0)));
        assert_eq!(
            lanes.pop(0),
            Some(Event::Span {
                start: 150,
                duration: 20,
                name: 11,
                id: 2,
                parent: 1,
                arg: Some(3)
            })
        );
        assert_eq!(
            lanes.pop(0),
            Some(Event::Span {
                start: 100,
                duration: 100,
                name: 10,
                id: 1,
                parent: 0,
                arg: None
            })
        );
    }

    #[test]
    fn deep_stacks_report_true_depth() {
        let lanes = Lanes::<1, 64>::new();
        let lane = lanes.claim(0, LaneKind::Main).unwrap();
        let tokens: std::vec::Vec<_> = (0..20).map(|i| lane.begin(i, u64::from(i))).collect();
        let mut open = [OpenSpan::default(); MAX_OPEN_SPANS];
        assert_eq!(lanes.open_spans(0, &mut open), Some((16, 20)));
        for t in tokens.into_iter().rev() {
            assert!(lane.end(t, 100, None));
        }
        assert_eq!(lanes.open_spans(0, &mut open), Some((0, 0)));
    }

    #[test]
    fn open_spans_read_consistently_while_the_owner_writes() {
        static LANES: Lanes<1, 4> = Lanes::new();
        let lane = LANES.claim(0, LaneKind::Main).unwrap();
        let stop = std::sync::Arc::new(core::sync::atomic::AtomicBool::new(false));
        let reader = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut open = [OpenSpan::default(); MAX_OPEN_SPANS];
                let mut reads = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    if let Some((n, depth)) = LANES.open_spans(0, &mut open) {
                        assert!(depth <= 3);
                        // Whatever the moment, the stack is a prefix of
                        // (name 0 @ 0, name 1 @ 1, name 2 @ 2).
                        for (i, span) in open[..n].iter().enumerate() {
                            assert_eq!((span.name, span.start), (i as u32, i as u64));
                        }
                        reads += 1;
                    }
                }
                reads
            })
        };
        for _ in 0..20_000 {
            let a = lane.begin(0, 0);
            let b = lane.begin(1, 1);
            let c = lane.begin(2, 2);
            let _ = lane.end(c, 3, None);
            let _ = lane.end(b, 3, None);
            let _ = lane.end(a, 3, None);
            while LANES.pop(0).is_some() {}
        }
        stop.store(true, Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
    }
}
