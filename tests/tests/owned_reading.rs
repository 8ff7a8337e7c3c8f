//! The owned reading (`typhon_live_reader::owned`), a frame at a time,
//! as the relay's merger, metrics and tracer take it: it tells restarts
//! and open spans as every other reader of the project does.

use typhon_live_core::{LaneInfo, OpenSpan};
use typhon_live_reader::owned::{Reader, Update};
use typhon_live_tests::{each_frame, nested_stream};

fn restarts(streams: &[Vec<u8>]) -> usize {
    let mut reader = Reader::default();
    let mut restarts = 0;
    for stream in streams {
        reader.reconnected();
        each_frame(stream, |frame| {
            reader
                .read(frame, 0, |update, _| {
                    restarts += usize::from(update == Update::Restarted)
                })
                .unwrap()
        });
    }
    restarts
}

/// Restarts as each reader of the project counts them: the relay's,
/// the view model's and the Perfetto writer's.
fn restarts_by_every_reader(streams: &[Vec<u8>]) -> [usize; 3] {
    let mut model = typhon_live_model::Model::default();
    let mut writer = typhon_live_convert::perfetto::TraceWriter::new();
    let mut out = Vec::new();
    for stream in streams {
        model.reconnected();
        each_frame(stream, |frame| {
            let _ = model.on_frame(frame, std::time::Duration::ZERO);
            let _ = writer.frame(frame, &mut out);
        });
    }
    [
        restarts(streams),
        model.restarts() as usize,
        writer.stats().restarts as usize,
    ]
}

/// `stream` with a Block of drop entries only (no records, so its
/// timestamps are 0) right after its Init.
fn with_an_empty_block_after_its_init(stream: &[u8]) -> Vec<u8> {
    let mut init_len = 0;
    each_frame(stream, |frame| {
        if init_len == 0 {
            init_len = frame.wire_len();
        }
    });
    let mut scratch = vec![0u8; 256];
    let empty = typhon_live_core::BlockBuilder::new(&mut scratch);
    let mut block = vec![0u8; 1024];
    let n = typhon_live_core::block::write_block(&mut block, 0, &empty, &[(0, 3)]).unwrap();
    [&stream[..init_len], &block[..n], &stream[init_len..]].concat()
}

#[test]
fn every_reader_tells_the_same_restarts_and_an_empty_block_is_none() {
    let late = nested_stream(5_000..5_010);
    assert_eq!(
        restarts_by_every_reader(&[late.clone(), nested_stream(0..10)]),
        [1, 1, 1]
    );
    assert_eq!(
        restarts_by_every_reader(&[nested_stream(0..10), late.clone()]),
        [0, 0, 0]
    );
    // A repeated Init, then a Block without records: its timestamps
    // (0) state no time. Each reader once took them for the clock
    // going back, a restart.
    let going_on = with_an_empty_block_after_its_init(&nested_stream(5_010..5_020));
    assert_eq!(restarts_by_every_reader(&[late, going_on]), [0, 0, 0]);
}

#[test]
fn a_catch_up_is_kept_as_deep_as_a_writer_tracks() {
    use typhon_live_core::catchup::write_catchup_of;
    use typhon_live_core::{LaneKind, OpenLane as Listed, MAX_OPEN_SPANS};
    // A peer listing more open spans than any writer tracks.
    let open: Vec<OpenSpan> = (1..=40)
        .map(|id| OpenSpan {
            id,
            name: 1,
            start: u64::from(id),
        })
        .collect();
    let lane = Listed {
        info: LaneInfo {
            id: 0,
            name: 0,
            kind: LaneKind::Main,
        },
        name: "Main",
        open_depth: 40,
        open: &open,
    };
    let mut out = vec![0u8; 4096];
    let n = write_catchup_of(&mut out, 0, 100, std::iter::once(lane)).unwrap();
    let mut kept = Vec::new();
    each_frame(&out[..n], |frame| {
        Reader::default()
            .read(frame, 0, |update, _| {
                if let Update::CatchUp { lanes, .. } = update {
                    kept.extend(lanes.into_iter().map(|l| (l.open_depth, l.open.len())));
                }
            })
            .unwrap()
    });
    assert_eq!(kept, [(40, MAX_OPEN_SPANS)]);
}

#[test]
fn the_same_id_with_the_clock_back_is_a_restart_and_going_on_is_not() {
    // The fixture's session id is always 9, its clock 1 MHz from 1 ms.
    let late = nested_stream(5_000..5_010);
    assert_eq!(restarts(&[late.clone(), nested_stream(0..10)]), 1);
    assert_eq!(restarts(&[nested_stream(0..10), late]), 0);
}
