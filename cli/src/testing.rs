//! Fixtures the unit tests share: streams from the core's exporter, fed
//! to a model as a connection would.

use ratatui::buffer::Buffer;
use typhon_live_core::{Decoder, Metadata, NameTable};

use crate::model::Model;

/// Ticks `ticks` (1 ms apart) of an outer span holding two inner ones (100 and 200
/// µs), from the core's exporter.
pub fn nested_stream(ticks: std::ops::Range<u64>) -> Vec<u8> {
    use typhon_live_core::{Exporter, LaneKind, Lanes};
    let lanes = Lanes::<2, 1024>::new();
    let mut names: NameTable<8, 128> = NameTable::new();
    let lane = lanes
        .claim(names.intern("Main").unwrap(), LaneKind::Main)
        .unwrap();
    let (outer, inner) = (
        names.intern("outer").unwrap(),
        names.intern("inner").unwrap(),
    );
    let mut scratch = vec![0u8; 1 << 16];
    let meta = Metadata {
        ticks_per_second: 1_000_000,
        session_id: 9,
        ..Metadata::default()
    };
    let mut exporter: Exporter<'_, 2> = Exporter::new(meta, &mut scratch);
    exporter.attach().unwrap();
    let mut out = vec![0u8; exporter.min_block_buffer()];
    let mut stream = Vec::new();
    for t in ticks {
        let at = 1_000 + t * 1_000;
        lane.tick_start(t, at);
        let o = lane.begin(outer, at);
        let a = lane.begin(inner, at + 100);
        lane.end(a, at + 200, None);
        let b = lane.begin(inner, at + 300);
        lane.end(b, at + 500, Some(t));
        lane.end(o, at + 900, None);
        lane.tick_end(t, at + 950, t == 42);
        exporter.request_drain();
        while let Some(frame) = exporter.poll(at + 999, &lanes, &names, &mut out).unwrap() {
            stream.extend_from_slice(&out[..frame.len]);
        }
    }
    stream
}

/// Every frame of `bytes` into `model`.
pub fn feed(model: &mut Model, bytes: &[u8]) {
    each_frame(bytes, |frame| {
        model.on_frame(frame, std::time::Duration::ZERO).unwrap()
    });
}

/// Every frame of `bytes`, whole, to `take`.
pub fn each_frame(mut bytes: &[u8], mut take: impl FnMut(&typhon_live_core::Frame<'_>)) {
    let mut buf = vec![0u8; 1 << 20];
    let mut decoder = Decoder::new(&mut buf);
    while !bytes.is_empty() {
        let n = decoder.feed(bytes);
        bytes = &bytes[n..];
        while let Some(frame) = decoder.next().unwrap() {
            take(&frame);
        }
    }
}

/// The symbols of `buf`, one line per row.
pub fn buffer_text(buf: &Buffer) -> String {
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(buf.area.x + x, buf.area.y + y)].symbol())
                .collect::<String>()
                + "\n"
        })
        .collect()
}
