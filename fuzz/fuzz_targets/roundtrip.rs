//! Arbitrary event batches through Block encode (packed, LZ4, or LZ4 when
//! it pays), then the stream decoder (fed in arbitrary chunks), must come
//! back equal, float bits included; and arbitrary stacks (nodes, frame
//! symbols, modules, samples) through their Definitions and Samples frames.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use typhon_live_core::block::{
    encode_events, encoding_buffer_len, max_compressed_block_frame_len, write_block_encoded,
};
use typhon_live_core::definitions::{write_stack_definitions, StackRanges};
use typhon_live_core::modules::MAX_BUILD_ID;
use typhon_live_core::samples::write_samples;
use typhon_live_core::stacks::{MAX_INLINED_FRAMES, MAX_STACK_NODES};
use typhon_live_core::{
    BlockBuilder, Compression, Decoder, Event, FieldOwner, FieldValue, FrameSymbol, GaugeValue,
    Lz4Table, Module, NameSource, NodeId, Payload, SamplesBatch, StackNode, StackSample, Unwinding,
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
    stacks: Stacks,
}

/// Stack definitions and samples: a node's parent as a distance back,
/// a sample's time as ticks before its frame's.
#[derive(Arbitrary, Debug)]
struct Stacks {
    first: u16,
    nodes: Vec<(Option<u16>, u64)>,
    symbols: Vec<(u64, Vec<u32>)>,
    modules: Vec<(u64, u64, u64, Vec<u8>, String)>,
    time: u64,
    samples: Vec<(u16, u64, u32, bool, bool)>,
}

struct Source {
    first: NodeId,
    nodes: Vec<StackNode>,
    symbols: Vec<(u64, Vec<u32>)>,
    modules: Vec<(u64, u64, u64, Vec<u8>, String)>,
}

impl NameSource for Source {
    fn count(&self) -> u32 {
        0
    }
    fn get(&self, _: u32) -> Option<&str> {
        None
    }
    fn stack_node_count(&self) -> u32 {
        self.first + self.nodes.len() as u32
    }
    fn stack_node(&self, id: NodeId) -> Option<StackNode> {
        self.nodes.get(id.checked_sub(self.first)? as usize).copied()
    }
    fn frame_symbol_count(&self) -> u32 {
        self.symbols.len() as u32
    }
    fn frame_symbol(&self, index: u32) -> Option<FrameSymbol<'_>> {
        let (address, frames) = self.symbols.get(index as usize)?;
        Some(FrameSymbol { address: *address, frames })
    }
    fn module_count(&self) -> u32 {
        self.modules.len() as u32
    }
    fn module(&self, index: u32) -> Option<Module<'_>> {
        let (start, size, bias, build_id, path) = self.modules.get(index as usize)?;
        Some(Module { start: *start, size: *size, bias: *bias, build_id, path })
    }
}

fn stacks_round_trip(stacks: &Stacks) {
    let first = NodeId::from(stacks.first);
    let nodes: Vec<StackNode> = (stacks.nodes.iter().take(512).enumerate())
        .map(|(i, &(back, address))| {
            let id = first + i as u32;
            let parent = back.and_then(|b| id.checked_sub(u32::from(b) + 1));
            StackNode { parent, address }
        })
        .collect();
    let symbols: Vec<(u64, Vec<u32>)> = (stacks.symbols.iter().take(128))
        .map(|(address, frames)| {
            let mut frames = frames.clone();
            frames.truncate(MAX_INLINED_FRAMES);
            if frames.is_empty() {
                frames.push(0);
            }
            (*address, frames)
        })
        .collect();
    let modules: Vec<(u64, u64, u64, Vec<u8>, String)> = (stacks.modules.iter().take(16))
        .map(|(start, size, bias, build_id, path)| {
            let build_id = build_id[..build_id.len().min(MAX_BUILD_ID)].to_vec();
            let path: String = path.chars().take(256).collect();
            (*start, *size, *bias, build_id, path)
        })
        .collect();
    let source = Source { first, nodes, symbols, modules };
    let ranges = StackRanges {
        nodes: first..source.stack_node_count(),
        symbols: 0..source.frame_symbol_count(),
        modules: 0..source.module_count(),
    };
    let mut out = vec![0u8; 64 + 20 * 512 + 128 * (11 + 5 * MAX_INLINED_FRAMES) + 16 * 1400];
    let len = write_stack_definitions(&mut out, 1, &source, ranges).expect("fits its bound");
    let samples: Vec<StackSample> = (stacks.samples.iter().take(256))
        .map(|&(lane, before, node, tables, cut)| StackSample {
            lane,
            time: stacks.time.saturating_sub(before),
            node: node % MAX_STACK_NODES,
            unwinding: if tables { Unwinding::UnwindTables } else { Unwinding::FramePointers },
            cut,
        })
        .collect();
    let batch = SamplesBatch { time: stacks.time, stacks: &samples, ..SamplesBatch::default() };
    let mut frame = vec![0u8; batch.max_frame_len()];
    let samples_len = write_samples(&mut frame, 2, &batch).expect("fits its bound");
    out.truncate(len);
    out.extend_from_slice(&frame[..samples_len]);

    let mut buf = vec![0u8; out.len()];
    let mut decoder = Decoder::new(&mut buf);
    assert_eq!(decoder.feed(&out), out.len());
    let f = decoder.next().expect("own output decodes").expect("whole");
    let Payload::Definitions(defs) = f.parse().expect("own output parses") else { panic!("not Definitions") };
    let read: Vec<(NodeId, StackNode)> = defs.stack_nodes().collect();
    assert_eq!(read.len(), source.nodes.len());
    for ((id, node), (i, want)) in read.iter().zip(source.nodes.iter().enumerate()) {
        assert_eq!((*id, node), (first + i as u32, want));
    }
    let read: Vec<(u64, Vec<u32>)> =
        defs.frame_symbols().map(|s| (s.address, s.frames.iter().collect())).collect();
    assert_eq!(read, source.symbols);
    let read: Vec<(u64, u64, u64, Vec<u8>, String)> = (defs.modules())
        .map(|(_, m)| (m.start, m.size, m.bias, m.build_id.to_vec(), m.path.to_string()))
        .collect();
    assert_eq!(read, source.modules);
    let f = decoder.next().expect("own output decodes").expect("whole");
    let Payload::Samples(view) = f.parse().expect("own output parses") else { panic!("not Samples") };
    assert!(view.stack_samples().eq(samples.iter().copied()));
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
    stacks_round_trip(&case.stacks);
});
