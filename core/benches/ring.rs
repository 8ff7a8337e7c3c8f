//! Recording cost of the event ring against `heapless::spsc::Queue`, side by
//! side in one run: push a batch of span events, then pop them all (the
//! producer's and the consumer's work for one drain), single-threaded so
//! that only the data structure is measured.
//!
//! `cargo bench -p typhon-live-core --bench ring`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use heapless::spsc::Queue;
use typhon_live_core::{Event, EventRing};

const BATCH: usize = 1024;

fn span(i: u64) -> Event {
    Event::Span {
        start: 1_000_000 + i * 977,
        duration: 4_000 + (i % 13) * 100,
        name: (i % 6) as u32,
        id: i as u32 + 1,
        parent: 1,
        arg: Some(i),
    }
}

fn rings(c: &mut Criterion) {
    let events: Vec<Event> = (0..BATCH as u64).map(span).collect();
    let mut group = c.benchmark_group("push+pop 1024 spans");
    group.throughput(Throughput::Elements(BATCH as u64));

    let ring = Box::new(EventRing::<2048>::new());
    group.bench_function(BenchmarkId::new("typhon EventRing", BATCH), |b| {
        b.iter(|| {
            for e in &events {
                black_box(ring.push(e));
            }
            while let Some(e) = ring.pop() {
                black_box(e);
            }
        })
    });

    // heapless holds N - 1 items: 2048 slots for a 1024 batch either way.
    let mut queue: Box<Queue<Event, 2048>> = Box::new(Queue::new());
    let (mut producer, mut consumer) = queue.split();
    group.bench_function(BenchmarkId::new("heapless spsc::Queue", BATCH), |b| {
        b.iter(|| {
            for e in &events {
                black_box(producer.enqueue(*e).is_ok());
            }
            while let Some(e) = consumer.dequeue() {
                black_box(e);
            }
        })
    });
    group.finish();

    println!(
        "record size: EventRing {} bytes/slot, heapless Queue<Event> {} bytes/slot",
        typhon_live_core::ring::RECORD_BYTES,
        std::mem::size_of::<Event>()
    );
}

criterion_group!(benches, rings);
criterion_main!(benches);
