//! The per-lane event ring: single producer, single consumer, fixed
//! storage.
//!
//! # Why our own ring and not `heapless::spsc::Queue`
//! Each slot is a fixed 40-byte record of five 64-bit words held in atomics
//! (ten 32-bit ones on targets without 64-bit atomics, such as thumbv7em),
//! written with relaxed stores and published by a release store of the head
//! index. That needs no `unsafe` at all: a caller that breaks the
//! single-producer contract can garble events but can never cause undefined
//! behaviour. The ring is `Sync` and `const`-constructible, so it lives in a
//! `static` and both ends work through `&self`, which lane reuse needs (a
//! thread that ends hands its lane to the next one). heapless's queue
//! (0.9.4, which has `const` constructors) was tried for that: its halves
//! come from `split(&mut self)`, so a queue in a `static` is split through
//! a `static mut` and an `unsafe` block (heapless's own example does so),
//! which the core's `forbid(unsafe_code)` rules out, and a lane's
//! `Producer` would then travel between threads through a lock. It also
//! holds `N - 1` items where this ring uses all `N`.
//!
//! Speed, measured by `cargo bench -p typhon-live-core --bench ring`
//! (push then pop 1024 span events, single thread, both in the same run,
//! on the shared 2-core CI machine; ratios of this ring's median to
//! heapless's in the same run, as the machine's speed drifts between
//! runs). It used to take 1.04 to 1.49 times heapless's time: storing the
//! five words through a loop over the slot's atomics, and the record
//! conversions not being inlined into `push` and `pop`, cost more than
//! copying heapless's 48-byte enum. Unrolled and inlined, it took 0.84,
//! 0.87 and 0.89 times heapless's time (3.6 µs against 4.1 to 4.3 µs per
//! 1024 events). The run-time capacity ([`EventRing::set_capacity`], the
//! std transport's `RingEvents`) costs a load and a shift per push and
//! pop: in three alternating pairs of runs, 0.94, 0.79, 0.83 without it
//! against 0.88, 0.99, 1.11 with it, so about heapless's speed (a median
//! of 0.99). In the exporter, which drains in batches
//! ([`EventRing::drain`]), the consumer pays it once per batch; the
//! recording thread pays it on every push, about 0.3 ns. Variable-size
//! byte records were not chosen: the compact
//! encoding happens once per Block on the exporter side anyway, and a
//! fixed record keeps the producer's path to a handful of stores.

use core::sync::atomic::{AtomicU32, Ordering};

use crate::event::{kind, Event, FieldOwner, FieldValue, GaugeValue};

/// Logical 64-bit words in one record.
const WORDS: usize = 5;

/// Size in bytes of one slot of an [`EventRing`].
pub const RECORD_BYTES: usize = WORDS * 8;

/// Flag in word 0: span has an argument, gauge is a float, tick overran.
const FLAG: u64 = 0x100;
/// Where word 0 keeps the name id.
const SHIFT_NAME: u32 = 32;

/// One record's storage: five 64-bit words, as atomics the target has.
#[cfg(target_has_atomic = "64")]
type Slot = Slot64;
#[cfg(not(target_has_atomic = "64"))]
type Slot = Slot32;

#[cfg(target_has_atomic = "64")]
struct Slot64([core::sync::atomic::AtomicU64; WORDS]);

#[cfg(target_has_atomic = "64")]
impl Slot64 {
    const fn new() -> Self {
        Slot64([const { core::sync::atomic::AtomicU64::new(0) }; WORDS])
    }

    #[inline(always)]
    fn store(&self, words: [u64; WORDS]) {
        let [a, b, c, d, e] = &self.0;
        a.store(words[0], Ordering::Relaxed);
        b.store(words[1], Ordering::Relaxed);
        c.store(words[2], Ordering::Relaxed);
        d.store(words[3], Ordering::Relaxed);
        e.store(words[4], Ordering::Relaxed);
    }

    #[inline(always)]
    fn load(&self) -> [u64; WORDS] {
        let [a, b, c, d, e] = &self.0;
        [
            a.load(Ordering::Relaxed),
            b.load(Ordering::Relaxed),
            c.load(Ordering::Relaxed),
            d.load(Ordering::Relaxed),
            e.load(Ordering::Relaxed),
        ]
    }
}

/// Two 32-bit atomics per word, for targets without 64-bit atomics. The
/// ring's head/tail protocol orders whole records, so split words are never
/// seen half-written.
#[cfg_attr(target_has_atomic = "64", allow(dead_code))]
struct Slot32([AtomicU32; 2 * WORDS]);

#[cfg_attr(target_has_atomic = "64", allow(dead_code))]
impl Slot32 {
    const fn new() -> Self {
        Slot32([const { AtomicU32::new(0) }; 2 * WORDS])
    }

    fn store(&self, words: [u64; WORDS]) {
        for (pair, word) in self.0.chunks_exact(2).zip(words) {
            pair[0].store(word as u32, Ordering::Relaxed);
            pair[1].store((word >> 32) as u32, Ordering::Relaxed);
        }
    }

    fn load(&self) -> [u64; WORDS] {
        let mut words = [0u64; WORDS];
        for (word, pair) in words.iter_mut().zip(self.0.chunks_exact(2)) {
            *word = u64::from(pair[0].load(Ordering::Relaxed))
                | (u64::from(pair[1].load(Ordering::Relaxed)) << 32);
        }
        words
    }
}

/// A wait-free single-producer/single-consumer ring of [`Event`]s.
///
/// `N` is the storage in events and must be a power of two; the capacity
/// in use is `N` unless [`EventRing::set_capacity`] lowers it, so that a
/// host can size its rings from configuration while they live in a
/// `static` (slots past the capacity are never touched: in a zeroed
/// `static` they cost no memory). One thread pushes, one thread pops; when
/// the ring is full a push is refused and counted in
/// [`EventRing::take_dropped`].
pub struct EventRing<const N: usize> {
    /// Free-running count of records ever pushed (producer-owned).
    head: AtomicU32,
    /// Free-running count of records ever popped (consumer-owned).
    tail: AtomicU32,
    /// The producer's last look at `tail`: it reads the consumer's cache
    /// line again only when the ring looks full, not on every push.
    tail_seen: AtomicU32,
    /// [`EventRing::passed_half`]'s schedule (producer-owned): it reads
    /// the consumer's index once `head` is half a ring past this.
    look_from: AtomicU32,
    /// One past the consumer's index when `passed_half` last said yes (0:
    /// never), so that a ring that stays past half is told once, and a ring
    /// the consumer drained and that fills again is told again.
    told_at: AtomicU32,
    dropped: AtomicU32,
    /// Capacity in use is `N >> shrink`. Zero by default, so that a ring
    /// in a `static` stays all zeroes: in `.bss`, not in the binary.
    shrink: AtomicU32,
    slots: [Slot; N],
}

impl<const N: usize> Default for EventRing<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> EventRing<N> {
    const CAPACITY_OK: () = assert!(
        N.is_power_of_two() && N <= (1 << 30),
        "EventRing capacity must be a power of two no larger than 2^30"
    );

    /// An empty ring; `const` so that it can initialise a `static`.
    pub const fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::CAPACITY_OK;
        EventRing {
            head: AtomicU32::new(0),
            tail: AtomicU32::new(0),
            tail_seen: AtomicU32::new(0),
            look_from: AtomicU32::new(0),
            told_at: AtomicU32::new(0),
            dropped: AtomicU32::new(0),
            shrink: AtomicU32::new(0),
            slots: [const { Slot::new() }; N],
        }
    }

    /// Capacity in events: `N`, or what [`EventRing::set_capacity`] set.
    #[inline]
    pub fn capacity(&self) -> usize {
        N >> self.shrink.load(Ordering::Relaxed)
    }

    /// Uses `events` of the ring's `N` slots: a power of two from 2 to
    /// `N`, else `false` and nothing changes. Only while the ring is empty
    /// and nobody records or drains (before recording starts): events
    /// in flight across a change are garbled, though never unsafely.
    pub fn set_capacity(&self, events: usize) -> bool {
        let valid = events.is_power_of_two() && (2..=N).contains(&events);
        if !valid || !self.is_empty() {
            return false;
        }
        let shrink = N.trailing_zeros() - events.trailing_zeros();
        self.shrink.store(shrink, Ordering::Relaxed);
        true
    }

    /// Slot of a free-running index; `capacity` is a power of two up to N.
    #[inline(always)]
    fn slot(&self, index: u32, capacity: usize) -> &Slot {
        &self.slots[index as usize & (capacity - 1) & (N - 1)]
    }

    /// Events waiting to be popped (a snapshot: the producer may add more).
    pub fn len(&self) -> usize {
        let head = self.head.load(Ordering::Acquire);
        let tail = self.tail.load(Ordering::Acquire);
        head.wrapping_sub(tail) as usize
    }

    /// True when no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Producer side: appends `event`, or counts it dropped and returns
    /// `false` when the ring is full. Never blocks, never allocates.
    #[inline]
    pub fn push(&self, event: &Event) -> bool {
        let capacity = self.capacity();
        let head = self.head.load(Ordering::Relaxed);
        if head.wrapping_sub(self.tail_seen.load(Ordering::Relaxed)) as usize >= capacity {
            let tail = self.tail.load(Ordering::Acquire);
            self.tail_seen.store(tail, Ordering::Relaxed);
            if head.wrapping_sub(tail) as usize >= capacity {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return false;
            }
        }
        self.slot(head, capacity).store(to_words(event));
        // Publishes the slot's words to the consumer's acquire of `head`.
        self.head.store(head.wrapping_add(1), Ordering::Release);
        true
    }

    /// Producer side, after a push: whether the ring just passed half
    /// full, so that a host can wake its consumer early instead of letting
    /// the ring fill while the consumer sleeps. Costs two loads of
    /// producer-owned words per call; at most once every `N / 2` pushes it
    /// reads the consumer's index. It answers `true` once per crossing: not
    /// again while the ring stays past half with the consumer idle, again
    /// once the consumer has taken events and the ring fills past half.
    #[inline]
    pub fn passed_half(&self) -> bool {
        let half = self.capacity() / 2;
        let head = self.head.load(Ordering::Relaxed);
        if (head.wrapping_sub(self.look_from.load(Ordering::Relaxed)) as usize) < half {
            return false;
        }
        let tail = self.tail.load(Ordering::Acquire);
        self.tail_seen.store(tail, Ordering::Relaxed);
        let past = head.wrapping_sub(tail) as usize >= half;
        // The next look: half a ring of pushes from now if past half, else
        // when the ring could first reach half (the consumer's index plus
        // half). Either way the distance starts below half again.
        self.look_from
            .store(if past { head } else { tail }, Ordering::Relaxed);
        let new = past && self.told_at.load(Ordering::Relaxed) != tail.wrapping_add(1);
        if new {
            self.told_at.store(tail.wrapping_add(1), Ordering::Relaxed);
        }
        new
    }

    /// Consumer side: takes the oldest event.
    pub fn pop(&self) -> Option<Event> {
        loop {
            let tail = self.tail.load(Ordering::Relaxed);
            let head = self.head.load(Ordering::Acquire);
            if tail == head {
                return None;
            }
            let words = self.slot(tail, self.capacity()).load();
            // Hands the slot back; the producer's acquire of `tail` orders
            // our loads before its next stores into it.
            self.tail.store(tail.wrapping_add(1), Ordering::Release);
            match from_words(words) {
                Some(event) => return Some(event),
                // Only reachable if two threads pushed at once (a contract
                // breach): count the garbled record instead of returning it.
                None => {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Consumer side: hands up to `max` waiting events, oldest first, to
    /// `take`, which returns `false` for an event it cannot take (that event
    /// stays in the ring, and the drain stops). Reads the producer's index
    /// once and publishes the consumer's once, however many events move.
    /// Returns how many were taken.
    pub fn drain(&self, max: usize, mut take: impl FnMut(Event) -> bool) -> usize {
        let capacity = self.capacity();
        let tail = self.tail.load(Ordering::Relaxed);
        let head = self.head.load(Ordering::Acquire);
        let available = (head.wrapping_sub(tail) as usize).min(max);
        let mut consumed = 0;
        let mut taken = 0;
        while consumed < available {
            let slot = self.slot(tail.wrapping_add(consumed as u32), capacity);
            match from_words(slot.load()) {
                Some(event) => {
                    if !take(event) {
                        break;
                    }
                    taken += 1;
                }
                // A garbled record (two producers at once): count, skip.
                None => {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
            consumed += 1;
        }
        // Hands the slots back; the producer's acquire of `tail` orders our
        // loads before its next stores into them.
        self.tail
            .store(tail.wrapping_add(consumed as u32), Ordering::Release);
        taken
    }

    /// Events refused because the ring was full, since the last call.
    pub fn take_dropped(&self) -> u32 {
        self.dropped.swap(0, Ordering::Relaxed)
    }
}

/// Record layout: word 0 = kind | flags | name << 32; word 1 = time;
/// word 2 = duration; word 3 = span id | parent << 32 (a field's owner);
/// word 4 = argument, payload, gauge value, tick number or field value.
/// A field's flag: its owner is a task.
#[inline(always)]
fn to_words(event: &Event) -> [u64; WORDS] {
    match *event {
        Event::Span {
            start,
            duration,
            name,
            id,
            parent,
            arg,
        } => [
            u64::from(kind::SPAN)
                | if arg.is_some() { FLAG } else { 0 }
                | (u64::from(name) << SHIFT_NAME),
            start,
            duration,
            u64::from(id) | (u64::from(parent) << 32),
            arg.unwrap_or(0),
        ],
        Event::Instant {
            time,
            name,
            payload,
        } => [
            u64::from(kind::INSTANT) | (u64::from(name) << SHIFT_NAME),
            time,
            0,
            0,
            payload,
        ],
        Event::Gauge { time, gauge, value } => {
            let (flag, bits) = match value {
                GaugeValue::Int(v) => (0, v as u64),
                GaugeValue::Float(v) => (FLAG, v.to_bits()),
            };
            [
                u64::from(kind::GAUGE) | flag | (u64::from(gauge) << SHIFT_NAME),
                time,
                0,
                0,
                bits,
            ]
        }
        Event::TickStart { time, tick } => [u64::from(kind::TICK_START), time, 0, 0, tick],
        Event::TaskBegin {
            time,
            name,
            task,
            parent,
        } => [
            u64::from(kind::TASK_BEGIN) | (u64::from(name) << SHIFT_NAME),
            time,
            parent,
            0,
            task,
        ],
        Event::Poll {
            start,
            duration,
            name,
            id,
            parent,
            task,
        } => [
            u64::from(kind::POLL) | (u64::from(name) << SHIFT_NAME),
            start,
            duration,
            u64::from(id) | (u64::from(parent) << 32),
            task,
        ],
        Event::TaskEnd {
            time,
            name,
            task,
            wall,
            busy,
        } => [
            u64::from(kind::TASK_END) | (u64::from(name) << SHIFT_NAME),
            time,
            wall,
            busy,
            task,
        ],
        Event::Field {
            time,
            key,
            value,
            owner,
        } => {
            let (code, bits) = match value {
                FieldValue::Int(v) => (kind::FIELD_INT, v as u64),
                FieldValue::Float(v) => (kind::FIELD_FLOAT, v.to_bits()),
                FieldValue::Str(v) => (kind::FIELD_STR, u64::from(v)),
            };
            let (flag, owner) = match owner {
                FieldOwner::Span(id) => (0, u64::from(id)),
                FieldOwner::Task(id) => (FLAG, id),
            };
            [
                u64::from(code) | flag | (u64::from(key) << SHIFT_NAME),
                time,
                0,
                owner,
                bits,
            ]
        }
        Event::Mark { time, label, span } => [
            u64::from(kind::MARK)
                | if span.is_some() { FLAG } else { 0 }
                | (u64::from(label) << SHIFT_NAME),
            time,
            0,
            span.map_or(0, |(_, start)| start),
            span.map_or(0, |(name, _)| u64::from(name)),
        ],
        Event::Allocated { time, span, bytes } => {
            [u64::from(kind::ALLOCATED), time, 0, u64::from(span), bytes]
        }
        Event::Unknown { time, kind } => [u64::from(kind), time, 0, 0, 0],
        Event::TickEnd {
            time,
            tick,
            overrun,
        } => [
            u64::from(kind::TICK_END) | if overrun { FLAG } else { 0 },
            time,
            0,
            0,
            tick,
        ],
    }
}

#[inline(always)]
fn from_words(w: [u64; WORDS]) -> Option<Event> {
    let flag = w[0] & FLAG != 0;
    let name = (w[0] >> SHIFT_NAME) as u32;
    let time = w[1];
    Some(match w[0] as u8 {
        kind::SPAN => Event::Span {
            start: time,
            duration: w[2],
            name,
            id: w[3] as u32,
            parent: (w[3] >> 32) as u32,
            arg: flag.then_some(w[4]),
        },
        kind::INSTANT => Event::Instant {
            time,
            name,
            payload: w[4],
        },
        kind::GAUGE => Event::Gauge {
            time,
            gauge: name,
            value: if flag {
                GaugeValue::Float(f64::from_bits(w[4]))
            } else {
                GaugeValue::Int(w[4] as i64)
            },
        },
        kind::TICK_START => Event::TickStart { time, tick: w[4] },
        kind::TICK_END => Event::TickEnd {
            time,
            tick: w[4],
            overrun: flag,
        },
        kind::TASK_BEGIN => Event::TaskBegin {
            time,
            name,
            task: w[4],
            parent: w[2],
        },
        kind::POLL => Event::Poll {
            start: time,
            duration: w[2],
            name,
            id: w[3] as u32,
            parent: (w[3] >> 32) as u32,
            task: w[4],
        },
        kind::TASK_END => Event::TaskEnd {
            time,
            name,
            task: w[4],
            wall: w[2],
            busy: w[3],
        },
        code @ (kind::FIELD_INT | kind::FIELD_FLOAT | kind::FIELD_STR) => Event::Field {
            time,
            key: name,
            value: match code {
                kind::FIELD_INT => FieldValue::Int(w[4] as i64),
                kind::FIELD_FLOAT => FieldValue::Float(f64::from_bits(w[4])),
                _ => FieldValue::Str(w[4] as u32),
            },
            owner: if flag {
                FieldOwner::Task(w[3])
            } else {
                FieldOwner::Span(w[3] as u32)
            },
        },
        kind::MARK => Event::Mark {
            time,
            label: name,
            span: flag.then_some((w[4] as u32, w[3])),
        },
        kind::ALLOCATED => Event::Allocated {
            time,
            span: w[3] as u32,
            bytes: w[4],
        },
        code @ kind::FIRST_RESERVED..=kind::LAST_RESERVED => Event::Unknown { time, kind: code },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::sync::Arc;
    use std::thread;

    fn instant(i: u64) -> Event {
        Event::Instant {
            time: i,
            name: (i % 7) as u32,
            payload: i * 3,
        }
    }

    #[test]
    fn passing_half_full_is_told_once_per_crossing() {
        let ring = EventRing::<8>::new();
        let mut told = 0;
        for i in 0..8 {
            assert!(ring.push(&instant(i)));
            if ring.passed_half() {
                told += 1;
                assert_eq!(ring.len(), 4);
            }
        }
        assert_eq!(told, 1);
        // Drained below half and filled again: told again.
        while ring.pop().is_some() {}
        let mut told = 0;
        for i in 0..6 {
            assert!(ring.push(&instant(i)));
            told += usize::from(ring.passed_half());
        }
        assert_eq!(told, 1);
        // Past half, drained, past half again (never full in between): told
        // again each time. The early-wake test of the std transport lost
        // events when the second crossing went untold.
        let ring = EventRing::<8>::new();
        for round in 0..5 {
            let mut told = 0;
            for i in 0..5 {
                assert!(ring.push(&instant(i)));
                told += usize::from(ring.passed_half());
            }
            assert_eq!(told, 1, "round {round}");
            while ring.pop().is_some() {}
        }
        // A consumer that keeps up: never told.
        let ring = EventRing::<8>::new();
        for i in 0..100 {
            assert!(ring.push(&instant(i)));
            assert!(!ring.passed_half());
            assert!(ring.pop().is_some());
        }
    }

    #[test]
    fn a_ring_starts_as_all_zero_bytes() {
        // What keeps a `static` of rings in `.bss` (zero pages, not bytes
        // in the binary): every field's initial value is zero. Checked
        // through the atomics' values, as the bytes are not reachable
        // without `unsafe`.
        let ring = EventRing::<4>::new();
        assert_eq!(ring.head.load(Ordering::Relaxed), 0);
        assert_eq!(ring.tail.load(Ordering::Relaxed), 0);
        assert_eq!(ring.tail_seen.load(Ordering::Relaxed), 0);
        assert_eq!(ring.look_from.load(Ordering::Relaxed), 0);
        assert_eq!(ring.told_at.load(Ordering::Relaxed), 0);
        assert_eq!(ring.dropped.load(Ordering::Relaxed), 0);
        assert_eq!(ring.shrink.load(Ordering::Relaxed), 0);
        assert_eq!(ring.capacity(), 4);
    }

    #[test]
    fn a_smaller_capacity_is_used_whole_and_only_while_empty() {
        let ring = EventRing::<16>::new();
        assert_eq!(ring.capacity(), 16);
        for bad in [0, 1, 3, 12, 32] {
            assert!(!ring.set_capacity(bad), "{bad}");
        }
        assert!(ring.set_capacity(4));
        for round in 0..3 {
            for i in 0..4 {
                assert!(ring.push(&instant(round * 10 + i)));
            }
            assert!(!ring.push(&instant(99)));
            assert!(!ring.set_capacity(8), "not while events wait");
            for i in 0..4 {
                assert_eq!(ring.pop(), Some(instant(round * 10 + i)));
            }
        }
        assert_eq!(ring.take_dropped(), 3);
        assert!(ring.set_capacity(16));
        assert_eq!(ring.capacity(), 16);
    }

    #[test]
    fn fills_to_capacity_then_counts_drops() {
        let ring = EventRing::<8>::new();
        for i in 0..8 {
            assert!(ring.push(&instant(i)));
        }
        assert_eq!(ring.len(), 8);
        assert!(!ring.push(&instant(8)));
        assert!(!ring.push(&instant(9)));
        assert_eq!(ring.take_dropped(), 2);
        assert_eq!(ring.take_dropped(), 0);
        for i in 0..8 {
            assert_eq!(ring.pop(), Some(instant(i)));
        }
        assert_eq!(ring.pop(), None);
        assert!(ring.push(&instant(10)));
        assert_eq!(ring.pop(), Some(instant(10)));
    }

    #[test]
    fn every_event_kind_survives_the_words() {
        let events = [
            Event::Span {
                start: u64::MAX,
                duration: u64::MAX,
                name: u32::MAX,
                id: u32::MAX,
                parent: 0,
                arg: Some(u64::MAX),
            },
            Event::Span {
                start: 0,
                duration: 0,
                name: 0,
                id: 1,
                parent: 7,
                arg: None,
            },
            Event::Gauge {
                time: 5,
                gauge: 2,
                value: GaugeValue::Int(i64::MIN),
            },
            Event::Gauge {
                time: 5,
                gauge: 2,
                value: GaugeValue::Float(-0.5),
            },
            Event::TickStart { time: 1, tick: 42 },
            Event::TickEnd {
                time: 9,
                tick: 42,
                overrun: true,
            },
        ];
        let ring = EventRing::<8>::new();
        for e in &events {
            assert!(ring.push(e));
        }
        for e in &events {
            assert_eq!(ring.pop().as_ref(), Some(e));
        }
    }

    #[test]
    fn both_slot_layouts_keep_every_bit() {
        let words = [u64::MAX, 0x0123_4567_89ab_cdef, 1, 1 << 63, 0xdead_beef];
        let narrow = Slot32::new();
        narrow.store(words);
        assert_eq!(narrow.load(), words);
        #[cfg(target_has_atomic = "64")]
        {
            let wide = Slot64::new();
            wide.store(words);
            assert_eq!(wide.load(), words);
        }
    }

    #[test]
    fn drain_stops_at_the_first_event_not_taken_and_keeps_it() {
        let ring = EventRing::<8>::new();
        for i in 0..6 {
            assert!(ring.push(&instant(i)));
        }
        let mut got = std::vec::Vec::new();
        let taken = ring.drain(usize::MAX, |e| {
            if got.len() == 3 {
                return false;
            }
            got.push(e);
            true
        });
        assert_eq!(taken, 3);
        assert_eq!(got, [instant(0), instant(1), instant(2)]);
        assert_eq!(ring.drain(2, |_| true), 2);
        assert_eq!(ring.pop(), Some(instant(5)));
        assert_eq!(ring.drain(10, |_| true), 0);
    }

    #[test]
    fn wraps_the_free_running_indices() {
        let ring = EventRing::<4>::new();
        ring.head.store(u32::MAX - 1, Ordering::Relaxed);
        ring.tail.store(u32::MAX - 1, Ordering::Relaxed);
        ring.tail_seen.store(u32::MAX - 1, Ordering::Relaxed);
        for i in 0..4 {
            assert!(ring.push(&instant(i)));
        }
        assert!(!ring.push(&instant(99)));
        for i in 0..4 {
            assert_eq!(ring.pop(), Some(instant(i)));
        }
    }

    #[test]
    fn producer_and_consumer_threads_lose_and_duplicate_nothing() {
        const TOTAL: u64 = 200_000;
        let ring = Arc::new(EventRing::<256>::new());
        let producer = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || {
                let mut i = 0;
                while i < TOTAL {
                    // Retry when full: the test is about a ring that is not
                    // full losing nothing, so a refused push is re-offered.
                    if ring.push(&instant(i)) {
                        i += 1;
                    } else {
                        thread::yield_now();
                    }
                }
            })
        };
        let mut expected = 0;
        while expected < TOTAL {
            match ring.pop() {
                Some(event) => {
                    assert_eq!(event, instant(expected));
                    expected += 1;
                }
                None => thread::yield_now(),
            }
        }
        producer.join().unwrap();
        assert_eq!(ring.pop(), None);
        // Refused pushes were counted, and only those.
        let _ = ring.take_dropped();
    }
}
