//! Fixtures the unit tests share: streams from the core's exporter, fed
//! to a model as a connection would.

use ratatui::buffer::Buffer;
pub use typhon_live_tests::{each_frame, nested_stream};

use typhon_live_model::Model;

/// Every frame of `bytes` into `model`.
pub fn feed(model: &mut Model, bytes: &[u8]) {
    each_frame(bytes, |frame| {
        model.on_frame(frame, std::time::Duration::ZERO).unwrap()
    });
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
