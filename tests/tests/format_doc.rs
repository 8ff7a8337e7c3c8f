//! docs/FORMAT.md and the encoder change together: the worked example's hex
//! dump must be exactly what the encoder writes, and decode as described.

use std::fs;
use std::path::Path;

use typhon_live_core::{Event, LaneKind};
use typhon_live_tests::{
    fields_example, fields_example_events, format_example, frames, read_stream, task_example,
    task_example_events, Owned,
};

/// The bytes of the hex dump between `<!-- NAME:begin -->` and
/// `<!-- NAME:end -->` in docs/FORMAT.md.
fn documented(name: &str) -> Vec<u8> {
    let doc = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/FORMAT.md"))
        .expect("docs/FORMAT.md");
    let begin = doc
        .find(&format!("<!-- {name}:begin -->"))
        .expect("example begin marker");
    let end = doc
        .find(&format!("<!-- {name}:end -->"))
        .expect("example end marker");
    doc[begin..end]
        .lines()
        .filter(|l| !l.starts_with("<!--") && !l.starts_with("```"))
        .flat_map(str::split_whitespace)
        .map(|h| u8::from_str_radix(h, 16).expect("hex byte"))
        .collect()
}

/// The one-Block example `name` (printed by `format_example -- ARG`) is
/// `written`, and reads back as `events` on `lane`, with no drop entry.
fn one_block_example(name: &str, arg: &str, written: Vec<u8>, lane: u16, events: &[Event]) {
    assert_eq!(
        documented(name),
        written,
        "FORMAT.md's {name} is stale: regenerate it with `cargo run -p typhon-live-tests --example format_example -- {arg}`"
    );
    let got = frames(read_stream(&written, &[], 4096));
    let [Owned::Block {
        events: read,
        drops,
        ..
    }] = &got[..]
    else {
        panic!("unexpected frames {got:?}");
    };
    assert!(drops.is_empty());
    let expected: Vec<(u16, Event)> = events.iter().map(|&e| (lane, e)).collect();
    assert_eq!(read, &expected);
}

#[test]
fn the_task_example_is_what_the_encoder_writes() {
    one_block_example(
        "tasks-example",
        "tasks",
        task_example(),
        1,
        &task_example_events(),
    );
}

#[test]
fn the_fields_example_is_what_the_encoder_writes() {
    one_block_example(
        "fields-example",
        "fields",
        fields_example(),
        0,
        &fields_example_events(),
    );
}

#[test]
fn the_worked_example_is_what_the_encoder_writes() {
    let documented = documented("example");
    let written = format_example();
    assert_eq!(
        documented, written,
        "FORMAT.md's example is stale: regenerate it with `cargo run -p typhon-live-tests --example format_example`"
    );

    let got = frames(read_stream(&written, &[], 4096));
    let [Owned::Init { lanes, names, .. }, Owned::Block { events, drops, .. }, Owned::Block {
        events: compressed,
        drops: no_drops,
        ..
    }, Owned::Shutdown { totals, .. }] = &got[..]
    else {
        panic!("unexpected frames {got:?}");
    };
    assert_eq!(
        compressed, events,
        "the compressed Block holds the same events"
    );
    assert!(no_drops.is_empty());
    assert_eq!(names, &[(0, "Main".to_string()), (1, "Tick".to_string())]);
    assert_eq!(lanes[0].kind, LaneKind::Main);
    assert_eq!(drops, &[(0, 3)]);
    assert_eq!(
        events[0],
        (
            0,
            Event::TickStart {
                time: 1000,
                tick: 7
            }
        )
    );
    assert_eq!(totals.events_dropped, 3);
}

#[test]
fn the_stacks_example_is_what_the_encoder_writes_and_reads_back() {
    use typhon_live_reader::{Reader, Update};
    use typhon_live_tests::{stacks_example, stacks_example_samples, STACKS_EXAMPLE_SYMBOLS};
    let written = stacks_example();
    assert_eq!(
        documented("stacks-example"),
        written,
        "FORMAT.md's stacks example is stale: regenerate it with `cargo run -p typhon-live-tests --example format_example -- stacks`"
    );
    let mut reader = Reader::new();
    let (mut nodes, mut symbols, mut samples) = (Vec::new(), Vec::new(), Vec::new());
    let damage = typhon_live_reader::frames(&written, |frame| {
        reader.read(frame, |_, update| match update {
            Update::StackNode { id, node } => nodes.push((id, node)),
            Update::FrameSymbol { address, frames } => {
                symbols.push((address, frames.iter().collect::<Vec<_>>()))
            }
            Update::StackSample(sample) => samples.push(sample),
            _ => {}
        })
    });
    assert!(damage.is_empty(), "{damage:?}");
    let want: Vec<_> = typhon_live_tests::stacks_example_nodes()
        .into_iter()
        .enumerate()
        .map(|(id, node)| (id as u32, node))
        .collect();
    assert_eq!(nodes, want);
    let want: Vec<_> = (STACKS_EXAMPLE_SYMBOLS.iter())
        .map(|&(address, frames)| (address, frames.to_vec()))
        .collect();
    assert_eq!(symbols, want);
    // No Init: the reader's clock is in ns, as the ticks are.
    assert_eq!(samples, stacks_example_samples());
    let stacks = reader.state().stacks();
    assert!(stacks.addresses(2).eq([0x40_15a0, 0x40_1230, 0x40_1000]));
    let module = stacks.module_of(0x40_15a0).expect("the example's module");
    let want = typhon_live_tests::STACKS_EXAMPLE_MODULE;
    assert_eq!(
        (module.start, module.end),
        (want.start, want.start + want.size)
    );
    assert_eq!(
        (module.build_id.as_slice(), module.path.as_str()),
        (want.build_id, want.path)
    );
    assert_eq!(module.file_address(0x40_15a0), 0x40_15a0);
}
