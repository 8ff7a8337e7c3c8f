//! The writer's throughput, and the choice of prost: the same packets
//! encoded by our prost messages and by rust-protobuf's types generated
//! from Perfetto's whole schema (`perfetto_protos`).
//!
//! `cargo bench -p typhon-live-convert`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use prost::Message as _;
use protobuf::Message as _;
use typhon_live_convert::perfetto::{proto, TraceWriter};
use typhon_live_core::{Compression, Decoder};

/// The whole stream through a writer: decoding, events, packets.
fn convert(stream: &[u8]) -> (Vec<u8>, u64) {
    // As `typhon-live convert` sizes it: no larger than the stream.
    let mut buf = vec![0u8; (16 << 20).min(stream.len().max(64))];
    let mut decoder = Decoder::new(&mut buf);
    let (mut writer, mut out) = (TraceWriter::new(), Vec::with_capacity(stream.len() * 4));
    let mut rest = stream;
    while !rest.is_empty() {
        let n = decoder.feed(rest);
        rest = &rest[n..];
        while let Ok(Some(frame)) = decoder.next() {
            let _ = writer.frame(&frame, &mut out);
        }
    }
    writer.finish(&mut out);
    let stats = writer.stats();
    (
        out,
        stats.spans + stats.instants + stats.counter_values + stats.ticks,
    )
}

fn benches(c: &mut Criterion) {
    let stream = typhon_live_tests::exporter_stream(500, 1 << 20, Compression::Auto);
    let (bytes, events) = convert(&stream);

    let mut group = c.benchmark_group("perfetto");
    group.throughput(Throughput::Elements(events));
    group.bench_function("convert (decode, write packets)", |b| {
        b.iter(|| convert(&stream))
    });

    // The same packets, already built, encoded by each library: for
    // rust-protobuf a lower bound of a writer on its types, which would
    // also build (and allocate) each message.
    let ours = proto::Trace::decode(&bytes[..]).expect("our own output");
    let theirs = perfetto_protos::trace::Trace::parse_from_bytes(&bytes).expect("our own output");
    assert_eq!(ours.encoded_len(), bytes.len());
    assert_eq!(theirs.compute_size() as usize, bytes.len());
    group.bench_function("encode built packets: prost (ours)", |b| {
        b.iter(|| ours.encode_to_vec())
    });
    group.bench_function(
        "encode built packets: rust-protobuf (perfetto_protos)",
        |b| b.iter(|| theirs.write_to_bytes().unwrap()),
    );
    group.finish();
}

criterion_group!(perfetto, benches);
criterion_main!(perfetto);
