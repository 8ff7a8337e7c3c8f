//! The one stream reader (`typhon-live-reader`): it never panics and
//! never holds more than its caps on any sequence of frames, it reads the
//! exporter's streams to what they carry, and the state it writes back
//! out reads back to the same state. (Its totals under random drops are
//! checked against the exporter's in `exporter.rs`.)

use proptest::prelude::*;
use typhon_live_core::catchup::write_catchup_of;
use typhon_live_core::definitions::write_definitions;
use typhon_live_core::frame::write_raw_frame;
use typhon_live_core::init::write_init;
use typhon_live_core::{
    Compression, Decoder, LaneInfo, LaneKind, Metadata, OpenLane, OpenSpan, Shutdown,
};
use typhon_live_reader::{
    Reader, State, TotalsCheck, Update, MAX_LANES, MAX_NAMES, MAX_NAME_BYTES,
};
use typhon_live_tests::{each_frame, exporter_stream, realistic_events, VecNames};

/// Reads every frame of `stream` (fed whole), gathering the updates as
/// text; damage is allowed.
fn read_all(reader: &mut Reader, stream: &[u8]) -> Vec<String> {
    let mut buf = vec![0u8; 1 << 20];
    let mut decoder = Decoder::new(&mut buf);
    let mut said = Vec::new();
    let mut rest = stream;
    loop {
        let taken = decoder.feed(rest);
        rest = &rest[taken..];
        loop {
            match decoder.next() {
                Ok(Some(frame)) => {
                    let _ = reader.read(&frame, |_, update| said.push(format!("{update:?}")));
                }
                Ok(None) => break,
                Err(_) => {}
            }
        }
        if rest.is_empty() || taken == 0 && decoder.buffered() == 0 {
            break;
        }
    }
    said
}

fn init(session_id: u64, next_seq: u32, names: &[&str], lanes: &[LaneInfo]) -> Vec<u8> {
    let meta = Metadata {
        ticks_per_second: 1_000_000,
        session_id,
        process_name: "p",
        process_id: 42,
        created_unix_ns: 7,
        ..Metadata::default()
    };
    let names = VecNames(names.iter().map(|n| n.to_string()).collect());
    let mut out = vec![0u8; 1 << 16];
    let n = write_init(&mut out, next_seq, &meta, &names, lanes.iter().copied()).unwrap();
    out.truncate(n);
    out
}

fn main_lane(name: u32) -> LaneInfo {
    LaneInfo {
        id: 0,
        name,
        kind: LaneKind::Main,
    }
}

/// A frame: one of the exporter's, kept or with a byte changed, or one
/// of any kind with any payload (checksums right, so the reader sees it).
fn frame() -> impl Strategy<Value = Vec<u8>> {
    let real: Vec<Vec<u8>> = frames_of(&exporter_stream(6, 4096, Compression::Auto));
    let count = real.len();
    prop_oneof![
        (0..count).prop_map({
            let real = real.clone();
            move |i| real[i].clone()
        }),
        (0..count, any::<usize>(), any::<u8>()).prop_map(move |(i, at, byte)| {
            // A changed payload byte, the checksums made right again.
            let frame = &real[i];
            let mut payload = frame[16..frame.len() - 4].to_vec();
            if !payload.is_empty() {
                let at = at % payload.len();
                payload[at] ^= byte | 1;
            }
            raw(
                frame[2],
                frame[3],
                u32::from_le_bytes(frame[4..8].try_into().unwrap()),
                &payload,
            )
        }),
        (
            0u8..8,
            any::<u8>(),
            0u32..64,
            prop::collection::vec(any::<u8>(), 0..200)
        )
            .prop_map(|(kind, flags, seq, payload)| raw(kind, flags, seq, &payload)),
    ]
}

fn raw(kind: u8, flags: u8, seq: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; payload.len() + 64];
    let n = write_raw_frame(&mut out, kind, flags, seq, payload).unwrap();
    out.truncate(n);
    out
}

/// Each whole frame of `stream`, as bytes.
fn frames_of(stream: &[u8]) -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    each_frame(stream, |frame| {
        let end = frame.offset as usize + frame.wire_len();
        frames.push(stream[frame.offset as usize..end].to_vec());
    });
    frames
}

/// What a state holds, comparable: session, names, lanes with open spans.
fn held(state: &State) -> String {
    let names: Vec<_> = state.names().iter().collect();
    let lanes: Vec<_> = state.lanes().values().collect();
    format!("{:?} {names:?} {lanes:?}", state.session())
}

fn check_bounded(state: &State) {
    assert!(state.names().len() <= MAX_NAMES);
    assert!(state.names().bytes() <= MAX_NAME_BYTES);
    assert!(state.lanes().len() <= MAX_LANES);
    for lane in state.lanes().values() {
        assert!(lane.open.len() <= typhon_live_core::MAX_OPEN_SPANS);
    }
}

/// `state` written out and read by a new reader: the same state.
fn check_start_reads_back(state: &State) {
    let start = state.write_start(5).expect("a state writes out");
    let mut again = Reader::new();
    read_all(&mut again, &start.bytes);
    let got = again.state();
    // Written in ns, read in ns: every time the same. Before any Init the
    // session written is 0.
    if state.session().is_some() {
        assert_eq!(held(got), held(state));
    } else {
        assert_eq!(got.session().map(|s| s.id), Some(0));
        assert_eq!(
            got.names().iter().collect::<Vec<_>>(),
            state.names().iter().collect::<Vec<_>>()
        );
    }
    assert_eq!(got.tally().frames_missed, 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn any_frames_read_without_panic_within_the_caps_and_write_back(
        frames in prop::collection::vec(frame(), 0..40),
        reconnect_at in prop::collection::vec(any::<bool>(), 40),
    ) {
        let mut reader = Reader::new();
        for (frame, reconnect) in frames.iter().zip(&reconnect_at) {
            if *reconnect {
                reader.reconnected();
            }
            read_all(&mut reader, frame);
            check_bounded(reader.state());
        }
        check_start_reads_back(reader.state());
    }
}

#[test]
fn an_exporter_stream_reads_to_its_events_and_totals() {
    let stream = exporter_stream(120, 4096, Compression::Lz4);
    let mut reader = Reader::new();
    let mut events = 0u64;
    let mut check = None;
    each_frame(&stream, |frame| {
        reader
            .read(frame, |state, update| match update {
                Update::Event { event, .. } => {
                    events += 1;
                    // Times in ns, on the 1 GHz clock of the fixture.
                    assert!(state.latest().unwrap() >= event.end_time());
                }
                Update::Shutdown { check: c, .. } => check = Some(c),
                _ => {}
            })
            .unwrap();
    });
    assert_eq!(events, realistic_events(120).len() as u64);
    assert_eq!(check, Some(TotalsCheck::Agree));
    let state = reader.state();
    assert_eq!(state.tally().events, events);
    assert_eq!(state.session().unwrap().process_name, "realistic");
    assert!(state.names().iter().any(|(_, n)| n == "late.name"));
}

#[test]
fn joining_mid_stream_is_told_and_names_stay_ids_until_the_next_init() {
    let stream = exporter_stream(3, 4096, Compression::Off);
    let mut reader = Reader::new();
    // Joined three bytes into the Init: it is lost, the rest is read.
    let said = read_all(&mut reader, &stream[3..]);
    assert!(said[0].starts_with("JoinedMidStream"), "{said:?}");
    assert!(reader.state().session().is_none());
    assert!(reader.state().tally().frames_before_init > 0);
    assert_eq!(reader.state().names().show(1), "#1");
    // A new connection that starts whole is not mid-stream.
    reader.reconnected();
    let said = read_all(&mut reader, &stream);
    assert!(said[0].starts_with("NewSession"), "{said:?}");
}

#[test]
fn a_written_start_carries_sparse_names_open_spans_and_the_clock_in_ns() {
    let mut reader = Reader::new();
    // Names 0..3 from the Init, then 10..12 from a Definitions (as if
    // 3..10 were refused or never seen).
    let mut stream = init(1, 0, &["Main", "outer", "inner"], &[main_lane(0)]);
    let more = VecNames((0..12).map(|i| format!("n{i}")).collect());
    let mut out = vec![0u8; 4096];
    let n = write_definitions(&mut out, 0, &more, 10, [main_lane(0)].into_iter()).unwrap();
    stream.extend_from_slice(&out[..n]);
    let open = [
        OpenSpan {
            id: 1,
            name: 1,
            start: 2_000,
        },
        OpenSpan {
            id: 2,
            name: 2,
            start: 2_500,
        },
    ];
    let lane = OpenLane {
        info: main_lane(0),
        name: "Main",
        open_depth: 2,
        open: &open,
    };
    let n = write_catchup_of(&mut out, 1, 3_000, std::iter::once(lane)).unwrap();
    stream.extend_from_slice(&out[..n]);
    read_all(&mut reader, &stream);
    let state = reader.state();
    // The 1 MHz clock's 2 000 ticks are 2 ms.
    assert_eq!(state.lanes()[&0].open[0].start, 2_000_000);
    assert_eq!(state.latest(), Some(3_000_000));
    let start = state.write_start(100).unwrap();
    assert_eq!(start.next_seq, 102, "Init, one Definitions, Catch-up");
    check_start_reads_back(state);
    let mut again = Reader::new();
    read_all(&mut again, &start.bytes);
    assert_eq!(again.state().names().show(5), "#5");
    assert_eq!(again.state().clock().ticks_per_second(), 1_000_000_000);
}

#[test]
fn a_span_listed_open_leaves_the_list_when_it_ends() {
    use typhon_live_core::{Exporter, Lanes, NameTable};
    let lanes: Lanes<1, 64> = Lanes::new();
    let mut names: NameTable<8, 64> = NameTable::new();
    let lane = lanes
        .claim(names.intern("Main").unwrap(), LaneKind::Main)
        .unwrap();
    let stall = lane.begin(names.intern("stall").unwrap(), 10);
    let meta = Metadata {
        ticks_per_second: 1_000,
        session_id: 3,
        ..Metadata::default()
    };
    let mut scratch = vec![0u8; 4096];
    let mut exporter: Exporter<'_, 1> = Exporter::new(meta, &mut scratch);
    exporter.attach().unwrap();
    let mut out = vec![0u8; 1 << 16];
    let mut poll = |exporter: &mut Exporter<'_, 1>, now| {
        let mut stream = Vec::new();
        exporter.request_drain();
        while let Some(frame) = exporter.poll(now, &lanes, &names, &mut out).unwrap() {
            stream.extend_from_slice(&out[..frame.len]);
        }
        stream
    };
    let mut reader = Reader::new();
    read_all(&mut reader, &poll(&mut exporter, 20));
    let open = &reader.state().lanes()[&0].open;
    assert_eq!(open.len(), 1, "the Catch-up lists the stall");
    assert_eq!(open[0].start, 10_000_000, "1 kHz ticks in ns");
    lane.end(stall, 30, None);
    read_all(&mut reader, &poll(&mut exporter, 40));
    assert!(reader.state().lanes()[&0].open.is_empty());
    let start = reader.state().write_start(0).unwrap();
    let mut again = Reader::new();
    read_all(&mut again, &start.bytes);
    assert!(again.state().lanes()[&0].open.is_empty());
}

/// An Init and a Catch-up with a span open, then a repeated Init and a
/// Catch-up two seconds earlier: a restart under the same id.
fn open_span_then_restart(at: u64) -> Vec<u8> {
    let mut stream = init(9, 0, &["Main", "outer"], &[main_lane(0)]);
    let open = [OpenSpan {
        id: 1,
        name: 1,
        start: at,
    }];
    let lane = OpenLane {
        info: main_lane(0),
        name: "Main",
        open_depth: 1,
        open: &open,
    };
    let mut out = vec![0u8; 4096];
    let n = write_catchup_of(&mut out, 0, at + 5_000_000, std::iter::once(lane)).unwrap();
    stream.extend_from_slice(&out[..n]);
    stream.extend_from_slice(&init(9, 1, &["Main", "outer"], &[main_lane(0)]));
    let n = write_catchup_of(&mut out, 1, at + 2_000_000, std::iter::empty()).unwrap();
    stream.extend_from_slice(&out[..n]);
    stream
}

#[test]
fn a_restart_under_the_same_id_is_told_once_and_forgets_open_spans() {
    let mut reader = Reader::new();
    let said = read_all(&mut reader, &open_span_then_restart(1_000));
    let restarts: Vec<_> = said.iter().filter(|s| s.starts_with("Restarted")).collect();
    assert_eq!(restarts, ["Restarted { from: 5001000000, to: 2001000000 }"]);
    assert_eq!(reader.state().tally().restarts, 1);
    assert!(reader.state().lanes().values().all(|l| l.open.is_empty()));
}

#[test]
fn a_damaged_block_is_told_as_its_records_lost_and_reading_goes_on() {
    let stream = exporter_stream(3, 4096, Compression::Off);
    let mut reader = Reader::new();
    let mut said = Vec::new();
    let mut damaged = None;
    for frame in frames_of(&stream) {
        let mut frame = frame;
        let records = u32::from_le_bytes(frame[16..20].try_into().unwrap());
        if frame[2] == 2 && damaged.is_none() && records > 0 {
            // A codec no version 3 writer uses: damage, its records lost.
            let seq = u32::from_le_bytes(frame[4..8].try_into().unwrap());
            frame = raw(frame[2], 7, seq, &frame[16..frame.len() - 4]);
            damaged = Some(records);
        }
        said.extend(read_all(&mut reader, &frame));
    }
    let records = damaged.expect("a Block with records");
    let tally = reader.state().tally();
    assert_eq!(
        (tally.frames_damaged, tally.events_damaged),
        (1, u64::from(records))
    );
    let lost = format!("Lost(Damaged {{ events: {records} }})");
    assert!(said.contains(&lost), "{said:?}");
    assert_eq!(
        tally.events + u64::from(records),
        realistic_events(3).len() as u64
    );
    assert!(said.last().unwrap().starts_with("Shutdown"));
}

#[test]
fn a_child_ending_with_its_parent_in_ticks_does_so_in_ns_too() {
    // At 3 ticks a second, ticks are not whole ns. A parent over ticks
    // 1..3 and an empty child at tick 3: converting each duration alone
    // put the parent's end at 999 999 999 ns and the child's at 10^9.
    let meta = Metadata {
        ticks_per_second: 3,
        session_id: 1,
        ..Metadata::default()
    };
    let names = VecNames(vec!["Main".into(), "parent".into(), "child".into()]);
    let mut stream = vec![0u8; 4096];
    let mut len = write_init(&mut stream, 0, &meta, &names, [main_lane(0)].into_iter()).unwrap();
    let span = |start, duration, name, id, parent| typhon_live_core::Event::Span {
        start,
        duration,
        name,
        id,
        parent,
        arg: None,
    };
    let mut scratch = vec![0u8; 1024];
    let mut block = typhon_live_core::BlockBuilder::new(&mut scratch);
    assert!(block.push(0, &span(3, 0, 2, 2, 1)));
    assert!(block.push(0, &span(1, 2, 1, 1, 0)));
    len += typhon_live_core::block::write_block(&mut stream[len..], 0, &block, &[]).unwrap();
    let mut ends = Vec::new();
    let mut reader = Reader::new();
    each_frame(&stream[..len], |frame| {
        reader
            .read(frame, |_, update| {
                if let Update::Event { event, .. } = update {
                    ends.push(event.end_time());
                }
            })
            .unwrap();
    });
    assert_eq!(ends, [1_000_000_000, 1_000_000_000]);
}

#[test]
fn a_shutdown_sent_again_tells_its_lost_events_once() {
    // An exporter writes a Shutdown again when a transport reports it
    // dropped; if both arrive, the second's totals agree and add nothing.
    let mut stream = init(5, 0, &[], &[]);
    for (seq, events_dropped) in [(0u32, 5u64), (1, 5), (2, 7)] {
        let totals = Shutdown {
            time: 1,
            frames_sent: u64::from(seq),
            frames_dropped: 0,
            events_dropped,
        };
        let mut out = [0u8; 64];
        let n = totals.write(&mut out, seq).unwrap();
        stream.extend(&out[..n]);
    }
    let mut reader = Reader::new();
    let said = read_all(&mut reader, &stream);
    let lost: Vec<&String> = said.iter().filter(|u| u.contains("AtShutdown")).collect();
    assert_eq!(
        lost,
        [
            "Lost(AtShutdown { events: 5 })",
            "Lost(AtShutdown { events: 2 })"
        ],
        "{said:?}"
    );
    assert_eq!(said.iter().filter(|u| u.contains("Agree")).count(), 3);
    assert_eq!(reader.state().tally().events_dropped, 7);
}

#[test]
fn samples_read_as_intervals_in_ns_and_a_lost_one_costs_detail_not_totals() {
    use typhon_live_core::samples::write_samples;
    use typhon_live_core::{Counters, LaneSample, SamplesBatch, Switch, SwitchRecord};
    use typhon_live_reader::Loss;

    // The clock counts µs: the reader hands on ns.
    let sample = |seq: u32, time: u64, cpu_ns: u64, switches: &[SwitchRecord]| {
        let lane = LaneSample {
            lane: 0,
            thread: 4242,
            switches_traced: true,
            counters: Counters {
                on_cpu_ns: Some(cpu_ns),
                waiting_ns: Some(cpu_ns / 10),
                voluntary: Some(cpu_ns / 100_000),
                involuntary: Some(0),
                ..Counters::default()
            },
        };
        let mut out = vec![0u8; 256];
        let batch = SamplesBatch {
            time,
            lanes: &[lane],
            switches,
            ..SamplesBatch::default()
        };
        let n = write_samples(&mut out, seq, &batch).unwrap();
        out.truncate(n);
        out
    };
    let switch = |time, what| SwitchRecord {
        lane: 0,
        time,
        what,
    };
    let mut stream = init(1, 0, &["Main"], &[main_lane(0)]);
    stream.extend(sample(0, 1_000, 0, &[]));
    let out_and_in = [switch(1_500, Switch::OutWaiting), switch(1_900, Switch::In)];
    stream.extend(sample(1, 2_000, 400_000, &out_and_in));
    // Frame 2, at 3 000 µs, lost on the way.
    stream.extend(sample(3, 4_000, 1_000_000, &[]));

    let mut reader = Reader::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut decoder = Decoder::new(&mut buf);
    decoder.feed(&stream);
    let (mut switches, mut intervals, mut gaps) = (Vec::new(), Vec::new(), 0);
    while let Ok(Some(frame)) = decoder.next() {
        reader
            .read(&frame, |_, update| match update {
                Update::Switch { lane, time, what } => switches.push((lane, time, what)),
                Update::Cpu(interval) => intervals.push(interval),
                Update::Lost(Loss::Gap { frames }) => gaps += frames,
                _ => {}
            })
            .unwrap();
    }
    assert_eq!(
        switches,
        [
            (0, 1_500_000, Switch::OutWaiting),
            (0, 1_900_000, Switch::In)
        ]
    );
    assert_eq!(gaps, 1);
    let spans: Vec<_> = intervals
        .iter()
        .map(|i| (i.from, i.to, i.spent.on_cpu_ns, i.spent.voluntary))
        .collect();
    // The interval over the lost frame is longer, its totals whole.
    assert_eq!(
        spans,
        [
            (1_000_000, 2_000_000, Some(400_000), Some(4)),
            (2_000_000, 4_000_000, Some(600_000), Some(6))
        ]
    );
    assert!(intervals
        .iter()
        .all(|i| i.thread == 4242 && i.switches_traced));
    assert_eq!(intervals[0].off_cpu_ns(), Some(1_000_000 - 440_000));
    assert_eq!(reader.state().latest(), Some(4_000_000));
}
