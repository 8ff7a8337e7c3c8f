use typhon_live_core::{Exporter, LaneKind, Lanes, Metadata, NameTable};
static L: Lanes<8, 65536> = Lanes::new();
fn main() {
    let events = typhon_live_tests::realistic_events(2000);
    let names: NameTable<8, 64> = NameTable::new();
    let handles: Vec<_> = (0..4)
        .map(|i| L.claim(i, LaneKind::Worker).unwrap())
        .collect();
    let mut scratch = vec![0u8; 256 << 10];
    let mut exporter: Exporter<'_, 8> = Exporter::new(
        Metadata {
            ticks_per_second: 1_000_000_000,
            ..Metadata::default()
        },
        &mut scratch,
    );
    let mut out = vec![0u8; exporter.min_block_buffer()];
    exporter.attach();
    let mut total = 0u64;
    for _ in 0..200 {
        for (lane, e) in &events {
            handles[*lane as usize % 4].record(e);
        }
        exporter.request_drain();
        while let Some(f) = exporter.poll(1, &L, &names, &mut out).unwrap() {
            total += u64::from(f.events);
        }
    }
    println!("{total}");
}
