//! Arbitrary bytes through the decoder into the one stream reader, with a
//! reconnect wherever the first byte's bits say; then its state written
//! back out as a stream start, which must read back to the same names,
//! lanes and open spans. The reader must never panic, and never hold more
//! than its caps.
#![no_main]

use libfuzzer_sys::fuzz_target;
use typhon_live_core::modules::MAX_MODULES;
use typhon_live_core::stacks::{MAX_STACK_DEPTH, MAX_STACK_NODES};
use typhon_live_core::{Decoder, MAX_OPEN_SPANS};
use typhon_live_reader::{
    Reader, State, Update, MAX_FRAME_SYMBOLS, MAX_LANES, MAX_NAMES, MAX_NAME_BYTES,
};

fn read(reader: &mut Reader, stream: &[u8], reconnects: u8) -> usize {
    let mut buf = vec![0u8; 64 << 10];
    let mut decoder = Decoder::new(&mut buf);
    let mut frames = 0usize;
    let mut rest = stream;
    while !rest.is_empty() {
        let n = decoder.feed(rest);
        rest = &rest[n..];
        loop {
            match decoder.next() {
                Ok(Some(frame)) => {
                    if reconnects & (1 << (frames % 8)) != 0 {
                        reader.reconnected();
                    }
                    frames += 1;
                    let _ = reader.read(&frame, |state, update| {
                        bounded(state);
                        // A sample's node is held, and its stack within
                        // the depth bound.
                        if let Update::StackSample(sample) = update {
                            let depth = state.stacks().addresses(sample.node).count();
                            assert!((1..=MAX_STACK_DEPTH).contains(&depth));
                        }
                    });
                }
                Ok(None) => break,
                Err(_) => {}
            }
        }
    }
    frames
}

fn bounded(state: &State) {
    assert!(state.names().len() <= MAX_NAMES);
    assert!(state.names().bytes() <= MAX_NAME_BYTES);
    assert!(state.lanes().len() <= MAX_LANES);
    assert!(state.lanes().values().all(|l| l.open.len() <= MAX_OPEN_SPANS));
    assert!(state.stacks().len() <= MAX_STACK_NODES as usize);
    assert!(state.stacks().symbols() <= MAX_FRAME_SYMBOLS);
    assert!(state.stacks().modules().count() <= MAX_MODULES as usize);
}

fuzz_target!(|data: &[u8]| {
    let Some((&reconnects, stream)) = data.split_first() else {
        return;
    };
    let mut reader = Reader::new();
    read(&mut reader, stream, reconnects);
    let state = reader.state();
    let start = state.write_start(0).expect("a reader's state writes out");
    let mut again = Reader::new();
    read(&mut again, &start.bytes, 0);
    let names = |s: &State| s.names().iter().map(|(id, n)| (id, n.to_owned())).collect::<Vec<_>>();
    assert_eq!(names(again.state()), names(state));
    assert_eq!(again.state().lanes(), state.lanes());
});
