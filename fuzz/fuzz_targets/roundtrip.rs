//! Arbitrary event batches through Block encode (packed, LZ4, or LZ4 when
//! it pays), then the stream decoder (fed in arbitrary chunks), must come
//! back equal, float bits included.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use typhon_live_core::block::{
    encode_events, encoding_buffer_len, max_compressed_block_frame_len, write_block_encoded,
};
use typhon_live_core::{
    BlockBuilder, Compression, Decoder, Event, FieldOwner, FieldValue, GaugeValue, Lz4Table, Payload,
};

#[derive(Arbitrary, Debug)]
enum Input {
    Span { start: u64, duration: u64, name: u32, id: u32, parent: u32, arg: Option<u64> },
    Instant { time: u64, name: u32, payload: u64 },
    GaugeInt { time: u64, gauge: u32, value: i64 },
    GaugeFloat { time: u64, gauge: u32, bits: u64 },
    TickStart { time: u64, tick: u64 },
    TickEnd { time: u64, tick: u64, overrun: bool },
    TaskBegin { time: u64, name: u32, task: u64, parent: u64 },
    Poll { start: u64, duration: u64, name: u32, id: u32, parent: u32, task: u64 },
    TaskEnd { time: u64, name: u32, task: u64, wall: u64, busy: u64 },
    Field { time: u64, key: u32, kind: u8, raw: u64, task_owner: bool, owner: u64 },
    Mark { time: u64, label: u32, span: Option<(u32, u64)> },
    Allocated { time: u64, span: u32, bytes: u64 },
    Unknown { time: u64, kind: u8 },
}

impl Input {
    fn event(&self) -> Event {
        match *self {
            Input::Span { start, duration, name, id, parent, arg } => Event::Span { start, duration, name, id, parent, arg },
            Input::Instant { time, name, payload } => Event::Instant { time, name, payload },
            Input::GaugeInt { time, gauge, value } => Event::Gauge { time, gauge, value: GaugeValue::Int(value) },
            Input::GaugeFloat { time, gauge, bits } => Event::Gauge { time, gauge, value: GaugeValue::Float(f64::from_bits(bits)) },
            Input::TickStart { time, tick } => Event::TickStart { time, tick },
            Input::TickEnd { time, tick, overrun } => Event::TickEnd { time, tick, overrun },
            Input::TaskBegin { time, name, task, parent } => Event::TaskBegin { time, name, task, parent },
            Input::Poll { start, duration, name, id, parent, task } => Event::Poll { start, duration, name, id, parent, task },
            Input::TaskEnd { time, name, task, wall, busy } => Event::TaskEnd { time, name, task, wall, busy },
            Input::Field { time, key, kind, raw, task_owner, owner } => Event::Field {
                time,
                key,
                value: match kind % 3 {
                    0 => FieldValue::Int(raw as i64),
                    1 => FieldValue::Float(f64::from_bits(raw)),
                    _ => FieldValue::Str(raw as u32),
                },
                owner: if task_owner { FieldOwner::Task(owner) } else { FieldOwner::Span(owner as u32) },
            },
            Input::Mark { time, label, span } => Event::Mark { time, label, span },
            Input::Allocated { time, span, bytes } => Event::Allocated { time, span, bytes },
            // The reserved kinds, 14 and 15.
            Input::Unknown { time, kind } => Event::Unknown { time, kind: 14 + kind % 2 },
        }
    }
}

fn same(a: &Event, b: &Event) -> bool {
    match (a, b) {
        (
            Event::Gauge { time: ta, gauge: ga, value: GaugeValue::Float(va) },
            Event::Gauge { time: tb, gauge: gb, value: GaugeValue::Float(vb) },
        ) => ta == tb && ga == gb && va.to_bits() == vb.to_bits(),
        (
            Event::Field { time: ta, key: ka, value: FieldValue::Float(va), owner: oa },
            Event::Field { time: tb, key: kb, value: FieldValue::Float(vb), owner: ob },
        ) => ta == tb && ka == kb && oa == ob && va.to_bits() == vb.to_bits(),
        _ => a == b,
    }
}

#[derive(Arbitrary, Debug)]
struct Case {
    seq: u32,
    chunk: u8,
    compression: u8,
    drops: Vec<(u16, u32)>,
    events: Vec<(u16, Input)>,
}

fuzz_target!(|case: Case| {
    let mut scratch = vec![0u8; 16 << 10];
    let mut builder = BlockBuilder::new(&mut scratch);
    let taken: Vec<(u16, Event)> = case
        .events
        .iter()
        .map(|(lane, input)| (*lane, input.event()))
        .take_while(|(lane, event)| builder.push(*lane, event))
        .collect();
    let drops = &case.drops[..case.drops.len().min(64)];
    let compression = [Compression::Off, Compression::Lz4, Compression::Auto]
        [usize::from(case.compression % 3)];
    let mut work = vec![0u8; encoding_buffer_len(builder.capacity(), compression)];
    let mut table = Lz4Table::small();
    let encoded = encode_events(&mut work, &builder, compression, Some(&mut table))
        .expect("fits its bound");
    let mut frame = vec![0u8; max_compressed_block_frame_len(builder.capacity(), drops.len())];
    let len = write_block_encoded(&mut frame, case.seq, &builder, drops, encoded, &work)
        .expect("fits its bound");
    let mut unpacked = vec![0u8; encoded.packed_len];

    let mut buf = vec![0u8; frame.len()];
    let mut decoder = Decoder::new(&mut buf);
    let mut found = false;
    for piece in frame[..len].chunks(usize::from(case.chunk).max(1)) {
        assert_eq!(decoder.feed(piece), piece.len());
        while let Some(f) = decoder.next().expect("own output decodes") {
            assert_eq!(f.seq, case.seq);
            let Payload::Block(block) = f.parse().expect("own output parses") else { panic!("not a Block") };
            assert!(block.drops().eq(drops.iter().copied()));
            assert_eq!(block.codec(), Ok(encoded.codec));
            let events: Vec<_> = block.events_in(&mut unpacked).expect("columns parse").collect::<Result<_, _>>().expect("events");
            assert_eq!(events.len(), taken.len());
            for ((la, ea), (lb, eb)) in events.iter().zip(&taken) {
                assert!(la == lb && same(ea, eb), "{ea:?} != {eb:?}");
            }
            // In batches, the fast path for runs of one kind.
            let mut reader = block.events_in(&mut unpacked).expect("columns parse");
            let mut batch = vec![(0, Event::TickStart { time: 0, tick: 0 }); usize::from(case.chunk) + 1];
            let mut read = Vec::new();
            while let n @ 1.. = reader.read(&mut batch).expect("own output decodes") {
                read.extend_from_slice(&batch[..n]);
            }
            assert_eq!(read.len(), taken.len());
            for ((la, ea), (lb, eb)) in read.iter().zip(&taken) {
                assert!(la == lb && same(ea, eb), "{ea:?} != {eb:?}");
            }
            found = true;
        }
    }
    assert!(found);
    decoder.finish().expect("nothing left over");
});
