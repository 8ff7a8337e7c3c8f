//! Block encoding on a realistic batch: how many bytes an event costs in a
//! Block, packed and with the LZ4 codec, against raw fixed-size records
//! with and without LZ4, and how fast encode and decode run in each codec,
//! side by side in one run; and a small Block's encoding (54 events, the
//! relay's merged Blocks' size), where each column's fixed cost shows.
//!
//! `cargo bench -p typhon-live-tests --bench block`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use typhon_live_core::block::{
    encode_events, encoding_buffer_len, max_block_frame_len, max_compressed_block_frame_len,
    write_block, write_block_encoded,
};
use typhon_live_core::ring::RECORD_BYTES;
use typhon_live_core::{BlockBuilder, BlockView, Compression, Event, LaneId, Lz4Table};
use typhon_live_tests::realistic_events;

const SCRATCH: usize = typhon_live_core::block::block_scratch_len(4096);

/// The events as fixed 40-byte records (the ring's slot size, lane id in
/// the padding), for the "raw records through LZ4" comparison.
fn raw_records(events: &[(LaneId, Event)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (lane, e) in events {
        let mut rec = [0u8; RECORD_BYTES];
        rec[..2].copy_from_slice(&lane.to_le_bytes());
        rec[2] = match e {
            Event::Span { .. } => 1,
            Event::Instant { .. } => 2,
            Event::Gauge { .. } => 3,
            Event::TickStart { .. } => 4,
            Event::TickEnd { .. } => 5,
            // The realistic mix has no tasks.
            _ => 0,
        };
        rec[8..16].copy_from_slice(&e.time().to_le_bytes());
        match *e {
            Event::Span {
                duration,
                name,
                id,
                parent,
                arg,
                ..
            } => {
                rec[16..24].copy_from_slice(&duration.to_le_bytes());
                rec[24..28].copy_from_slice(&name.to_le_bytes());
                rec[28..32].copy_from_slice(&id.to_le_bytes());
                rec[32..36].copy_from_slice(&parent.to_le_bytes());
                rec[36..40].copy_from_slice(&(arg.unwrap_or(0) as u32).to_le_bytes());
            }
            Event::Instant { name, payload, .. } => {
                rec[24..28].copy_from_slice(&name.to_le_bytes());
                rec[16..24].copy_from_slice(&payload.to_le_bytes());
            }
            Event::Gauge { gauge, value, .. } => {
                rec[24..28].copy_from_slice(&gauge.to_le_bytes());
                let bits = match value {
                    typhon_live_core::GaugeValue::Int(v) => v as u64,
                    typhon_live_core::GaugeValue::Float(v) => v.to_bits(),
                };
                rec[16..24].copy_from_slice(&bits.to_le_bytes());
            }
            Event::TickStart { tick, .. } | Event::TickEnd { tick, .. } => {
                rec[16..24].copy_from_slice(&tick.to_le_bytes());
            }
            _ => {}
        }
        out.extend(rec);
    }
    out
}

/// Encodes as many events as one Block takes; returns (frame length,
/// events taken).
fn encode(events: &[(LaneId, Event)], scratch: &mut [u8], frame: &mut [u8]) -> (usize, usize) {
    let mut builder = BlockBuilder::new(scratch);
    let taken = events
        .iter()
        .take_while(|(lane, e)| builder.push(*lane, e))
        .count();
    let len = write_block(frame, 0, &builder, &[]).expect("frame fits");
    (len, taken)
}

/// [`encode`] with the LZ4 codec, as the exporter does it: pack into a
/// work buffer, compress, frame.
fn encode_lz4(
    events: &[(LaneId, Event)],
    scratch: &mut [u8],
    work: &mut [u8],
    table: &mut Lz4Table,
    frame: &mut [u8],
) -> usize {
    let mut builder = BlockBuilder::new(scratch);
    for (lane, e) in events {
        if !builder.push(*lane, e) {
            break;
        }
    }
    let encoded = encode_events(work, &builder, Compression::Lz4, Some(table)).expect("work fits");
    write_block_encoded(frame, 0, &builder, &[], encoded, work).expect("frame fits")
}

fn lz4_len(bytes: &[u8]) -> usize {
    let mut out = vec![0u8; lz4_flex::block::get_maximum_output_size(bytes.len())];
    lz4_flex::block::compress_into(bytes, &mut out).expect("fits its bound")
}

fn blocks(c: &mut Criterion) {
    let events = realistic_events(120);
    let mut scratch = vec![0u8; SCRATCH];
    let mut frame = vec![0u8; max_block_frame_len(SCRATCH, 0)];
    let (frame_len, taken) = encode(&events, &mut scratch, &mut frame);
    let raw = raw_records(&events[..taken]);
    let raw_lz4 = lz4_len(&raw);
    // The frame's 16-byte header and 4-byte trailer stay as they are.
    let block_lz4 = 20 + lz4_len(&frame[16..frame_len - 4]);

    println!(
        "realistic batch: {taken} events in one Block ({} ticks of the demo workload)",
        120
    );
    println!("| encoding | bytes | bytes/event | ratio vs raw |");
    println!("|---|---:|---:|---:|");
    let row = |name: &str, bytes: usize| {
        println!(
            "| {name} | {bytes} | {:.2} | {:.1}x |",
            bytes as f64 / taken as f64,
            raw.len() as f64 / bytes as f64
        )
    };
    row("raw 40-byte records", raw.len());
    row("raw records + LZ4", raw_lz4);
    row("typhon Block frame (bit-packed columns)", frame_len);
    row("typhon Block frame, payload through LZ4", block_lz4);
    let mut work = vec![0u8; encoding_buffer_len(SCRATCH, Compression::Lz4)];
    let mut table = Lz4Table::large();
    let mut lz4_frame = vec![0u8; max_compressed_block_frame_len(SCRATCH, 0)];
    let lz4_frame_len = encode_lz4(&events, &mut scratch, &mut work, &mut table, &mut lz4_frame);
    row(
        "typhon Block frame, LZ4 codec (format version 3)",
        lz4_frame_len,
    );

    let mut group = c.benchmark_group("block");
    group.throughput(Throughput::Elements(taken as u64));
    group.bench_function("encode", |b| {
        b.iter(|| black_box(encode(black_box(&events), &mut scratch, &mut frame)))
    });
    let (frame_len, _) = encode(&events, &mut scratch, &mut frame);
    let payload = &frame[16..frame_len - 4];
    group.bench_function("decode", |b| {
        b.iter(|| {
            let view = BlockView::parse(black_box(payload), 0).expect("valid");
            let mut n = 0usize;
            for e in view.events().expect("valid") {
                black_box(e.expect("valid"));
                n += 1;
            }
            n
        })
    });
    let mut batch = vec![(0, Event::TickStart { time: 0, tick: 0 }); 1024];
    group.bench_function("decode, read in batches", |b| {
        b.iter(|| {
            let view = BlockView::parse(black_box(payload), 0).expect("valid");
            let mut reader = view.events().expect("valid");
            let mut n = 0usize;
            while let Ok(got @ 1..) = reader.read(&mut batch) {
                black_box(&batch[..got]);
                n += got;
            }
            n
        })
    });
    group.bench_function("encode, LZ4 codec", |b| {
        b.iter(|| {
            black_box(encode_lz4(
                black_box(&events),
                &mut scratch,
                &mut work,
                &mut table,
                &mut lz4_frame,
            ))
        })
    });
    let lz4_frame_len = encode_lz4(&events, &mut scratch, &mut work, &mut table, &mut lz4_frame);
    let lz4_payload = &lz4_frame[16..lz4_frame_len - 4];
    let mut unpacked = vec![0u8; 1 << 20];
    group.bench_function("decode LZ4 codec, read in batches", |b| {
        b.iter(|| {
            let view = BlockView::parse(black_box(lz4_payload), 1).expect("valid");
            let mut reader = view.events_in(&mut unpacked).expect("valid");
            let mut n = 0usize;
            while let Ok(got @ 1..) = reader.read(&mut batch) {
                black_box(&batch[..got]);
                n += got;
            }
            n
        })
    });
    group.finish();

    // Small Blocks: the same events, 54 a Block.
    let mut small = c.benchmark_group("small block");
    small.throughput(Throughput::Elements(events.len() as u64));
    small.bench_function("encode, 54 events a Block", |b| {
        b.iter(|| {
            let mut bytes = 0;
            for batch in events.chunks(54) {
                bytes += encode(black_box(batch), &mut scratch, &mut frame).0;
            }
            bytes
        })
    });
    small.finish();
}

criterion_group!(benches, blocks);
criterion_main!(benches);
