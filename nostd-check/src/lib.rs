//! Links the core's encoder and decoder into a `no_std` library.
#![no_std]

use core::panic::PanicInfo;

use typhon_live_core::block::write_block;
use typhon_live_core::{BlockBuilder, Decoder, Event};

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    loop {}
}

/// Encodes one event into a Block and decodes it again; returns the number
/// of frames read back, so that nothing is optimised away.
#[no_mangle]
pub extern "C" fn typhon_nostd_round_trip() -> u32 {
    let mut scratch = [0u8; 256];
    let mut frame = [0u8; 512];
    let mut builder = BlockBuilder::new(&mut scratch);
    builder.push(0, &Event::TickStart { time: 1, tick: 1 });
    let Ok(n) = write_block(&mut frame, 0, &builder, &[]) else {
        return 0;
    };
    let mut buf = [0u8; 1024];
    let mut decoder = Decoder::new(&mut buf);
    decoder.feed(&frame[..n]);
    let mut frames = 0;
    while let Ok(Some(_)) = decoder.next() {
        frames += 1;
    }
    frames
}
