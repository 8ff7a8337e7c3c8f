//! The recorder over a stream the core's exporter writes: a 60 Hz main
//! loop with a long "Level" span, a 1.2 s stall, gauges; each frame fed
//! as a transport would, with its arrival time.

use typhon_live_core::{
    Decoder, Event, Exporter, GaugeValue, LaneKind, Lanes, Metadata, NameTable,
};
use typhon_live_reader::{Reader, Update};
use typhon_live_recorder::{Capture, Recorder, Settings, Trigger};

const MS: u64 = 1_000_000;
const S: u64 = 1_000 * MS;
/// The stream's clock is ns since the process began; it began at this
/// Unix time.
const UNIX_BASE: u64 = 1_700_000_000 * S;
/// The stream's clock: 10 MHz, so that a capture's start must be written
/// in the session's own ticks for its frames to follow it as received.
const TICKS_PER_SECOND: u64 = 10_000_000;
/// `ns` in the stream's ticks.
const fn tk(ns: u64) -> u64 {
    ns / (1_000_000_000 / TICKS_PER_SECOND)
}
/// "Level" begins with the first tick from 5 s: 313 ticks of 16 ms.
const LEVEL_FROM: u64 = 313 * 16 * MS;
/// "Load" is open over the Catch-up near 8 s, and ends after it: from
/// tick 469 to tick 519.
const LOAD: core::ops::Range<u64> = 469 * 16 * MS..519 * 16 * MS;

/// A run of `seconds`: ticks every 16 ms, each with a "Sim" span; a tick
/// at `stall_at` that lasts 1.2 s; "Level" open from 5 s to 15 s; "Load"
/// open over [`LOAD`]; a
/// "memory" gauge climbing 1 MB a tick. The exporter is polled every
/// 16 ms of the clock, stall or not (its thread does not stall), and each
/// frame goes to `recorder` with `now` told after each poll.
fn run(recorder: &mut Recorder, seconds: u64, stalls: &[u64]) {
    let recorder = std::cell::RefCell::new(recorder);
    run_with(
        |frame, arrival| recorder.borrow_mut().frame(frame, arrival),
        |now| recorder.borrow_mut().now(now),
        seconds,
        stalls,
    );
    recorder.borrow_mut().end();
}

/// [`run`]'s stream, each frame to `frame` with its arrival time, and
/// the time after each poll to `now`.
fn run_with(
    mut frame: impl FnMut(&typhon_live_core::Frame<'_>, u64),
    mut now_is: impl FnMut(u64),
    seconds: u64,
    stalls: &[u64],
) {
    // Each run its own lanes: tests run at once, and an exporter drains
    // every lane of its table.
    let lanes: Box<Lanes<1, 4096>> = Box::new(Lanes::new());
    let lanes = &*lanes;
    let mut names: NameTable<16, 512> = NameTable::new();
    let main = lanes
        .claim(names.intern("Main").unwrap(), LaneKind::Main)
        .unwrap();
    let sim = names.intern("Sim").unwrap();
    let level = names.intern("Level").unwrap();
    let load = names.intern("Load").unwrap();
    let memory = names.intern("memory").unwrap();
    let meta = Metadata {
        ticks_per_second: TICKS_PER_SECOND,
        process_name: "recorder-test",
        session_id: 7,
        created_unix_ns: UNIX_BASE,
        ..Metadata::default()
    };
    let mut scratch = vec![0u8; 1 << 16];
    let mut exporter: Exporter<'_, 1> = Exporter::new(meta, &mut scratch);
    exporter.attach().unwrap();
    let mut out = vec![0u8; 1 << 20];
    let mut buf = vec![0u8; 1 << 20];
    let mut decoder = Decoder::new(&mut buf);
    let mut level_span = None;
    let mut load_span = None;
    let (mut t, mut tick) = (0u64, 0u64);
    let mut poll = |exporter: &mut Exporter<'_, 1>, decoder: &mut Decoder<'_>, now: u64| {
        exporter.request_drain();
        while let Some(frame) = exporter.poll(tk(now), lanes, &names, &mut out).unwrap() {
            decoder.feed(&out[..frame.len]);
        }
        while let Some(decoded) = decoder.next().unwrap() {
            frame(&decoded, UNIX_BASE + now);
        }
        now_is(UNIX_BASE + now);
    };
    while t < seconds * S {
        if t >= LEVEL_FROM && level_span.is_none() {
            level_span = Some(main.begin(level, tk(t)));
        }
        if t >= 15 * S {
            if let Some(span) = level_span.take() {
                main.end(span, tk(t), None);
            }
        }
        if LOAD.contains(&t) && load_span.is_none() {
            load_span = Some(main.begin(load, tk(t)));
        }
        if t >= LOAD.end {
            if let Some(span) = load_span.take() {
                main.end(span, tk(t), None);
            }
        }
        let stall = stalls.iter().any(|&at| (at..at + 16 * MS).contains(&t));
        let length = if stall { 1_200 * MS } else { 16 * MS };
        main.tick_start(tick, tk(t));
        let span = main.begin(sim, tk(t + MS));
        // The exporter's thread goes on while the tick is stalled.
        let mut at = t;
        while at + 16 * MS < t + length {
            at += 16 * MS;
            poll(&mut exporter, &mut decoder, at);
        }
        main.end(span, tk(t + length - MS), None);
        main.gauge(
            memory,
            tk(t + length - MS),
            GaugeValue::Int((tick * 1_000_000) as i64),
        );
        main.tick_end(tick, tk(t + length), false);
        t += length;
        tick += 1;
        poll(&mut exporter, &mut decoder, t);
    }
}

/// A mark as read: its label, its span's name and start, its time.
type ReadMark = (String, Option<(String, u64)>, u64);

/// Everything a reader makes of `capture`.
struct Read {
    frames: u64,
    missed: u64,
    damaged: u64,
    first_kinds: Vec<u8>,
    /// (name, start) of each span the capture's first Catch-up lists open.
    open_at_start: Vec<(String, u64)>,
    /// (name, start) of each span that ended in it.
    ended: Vec<(String, u64)>,
    ticks: Vec<(u64, u64, u64)>,
    unnamed: u64,
    marks: Vec<ReadMark>,
    first_time: u64,
    last_time: u64,
}

fn read(capture: &Capture) -> Read {
    let mut buf = vec![0u8; 1 << 20];
    let mut decoder = Decoder::new(&mut buf);
    decoder.feed(&capture.bytes);
    let mut reader = Reader::new();
    let mut read = Read {
        frames: 0,
        missed: 0,
        damaged: 0,
        first_kinds: Vec::new(),
        open_at_start: Vec::new(),
        ended: Vec::new(),
        ticks: Vec::new(),
        unnamed: 0,
        marks: Vec::new(),
        first_time: u64::MAX,
        last_time: 0,
    };
    let mut tick_starts = std::collections::HashMap::new();
    let mut catchups = 0;
    loop {
        match decoder.next() {
            Ok(Some(frame)) => {
                if read.first_kinds.len() < 2 {
                    read.first_kinds.push(frame.kind);
                }
                reader
                    .read(&frame, |state, update| match update {
                        Update::CatchUp { .. } => {
                            catchups += 1;
                            if catchups == 1 {
                                for lane in state.lanes().values() {
                                    for open in &lane.open {
                                        let name = state.names().show(open.name).into_owned();
                                        read.open_at_start.push((name, open.start));
                                    }
                                }
                            }
                        }
                        Update::Event { event, .. } => {
                            read.first_time = read.first_time.min(event.end_time());
                            read.last_time = read.last_time.max(event.time());
                            let name = match event {
                                Event::Span { name, .. } => Some(name),
                                Event::Gauge { gauge, .. } => Some(gauge),
                                _ => None,
                            };
                            if name.is_some_and(|id| state.names().get(id).is_none()) {
                                read.unnamed += 1;
                            }
                            match event {
                                Event::Span { name, start, .. } => {
                                    let name = state.names().show(name).into_owned();
                                    read.ended.push((name, start));
                                }
                                Event::Mark { time, label, span } => {
                                    let show = |id| state.names().show(id).into_owned();
                                    let span = span.map(|(name, start)| (show(name), start));
                                    read.marks.push((show(label), span, time));
                                }
                                Event::TickStart { time, tick } => {
                                    tick_starts.insert(tick, time);
                                }
                                Event::TickEnd { time, tick, .. } => {
                                    if let Some(start) = tick_starts.get(&tick) {
                                        read.ticks.push((tick, *start, time - start));
                                    }
                                }
                                _ => {}
                            }
                        }
                        _ => {}
                    })
                    .unwrap();
            }
            Ok(None) => break,
            Err(_) => read.damaged += 1,
        }
    }
    let tally = reader.state().tally();
    read.frames = tally.frames;
    read.missed = tally.frames_missed;
    read.damaged += tally.frames_damaged;
    read
}

fn settings() -> Settings {
    Settings {
        before_ns: 2 * S,
        after_ns: 2 * S,
        ..Settings::default()
    }
}

#[test]
fn a_stall_yields_one_capture_holding_it_whole_with_what_was_open() {
    let triggers = vec!["tick > 100ms".parse::<Trigger>().unwrap()];
    let mut recorder = Recorder::new(settings(), triggers);
    run(&mut recorder, 20, &[10 * S]);
    let capture = recorder.take().expect("a capture");
    assert!(recorder.take().is_none(), "one stall, one capture");
    assert_eq!(recorder.stats().captures, 1);

    // Fired while the stall was still open, 100 ms in (within a poll).
    assert_eq!(capture.fired.len(), 1);
    let fired = &capture.fired[0];
    assert_eq!(fired.trigger, Some(0));
    assert!(
        (10_100 * MS..=10_116 * MS).contains(&fired.time),
        "{fired:?}"
    );
    assert!(fired.what.starts_with("tick "), "{}", fired.what);

    let read = read(&capture);
    assert_eq!((read.missed, read.damaged, read.unnamed), (0, 0, 0));
    // Init first; the written start's Catch-up next (no Definitions: the
    // names are one run from 0).
    assert_eq!(read.first_kinds, [1, 4]);
    // The window: from 2 s before the trigger (a Catch-up at most 1 s
    // earlier: a tick trigger's recorder skims) to 2 s after it.
    let from = fired.time - 2 * S;
    assert!(
        (from - S - 16 * MS..=from).contains(&capture.begin),
        "window from {} ms, asked {} ms",
        capture.begin / MS,
        from / MS
    );
    assert!(
        read.first_time >= capture.begin - 16 * MS,
        "{} {}",
        read.first_time,
        capture.begin
    );
    assert!(read.last_time >= fired.time + 2 * S - 32 * MS);
    // The stall, whole: the tick from 10 s (625 ticks of 16 ms) took 1.2 s.
    let longest = read.ticks.iter().max_by_key(|t| t.2).copied();
    assert_eq!(longest, Some((625, 10 * S, 1_200 * MS)));
    // The trigger is in the file as a mark, at its time, labelled as
    // written.
    assert_eq!(read.marks, [("tick > 100ms".to_string(), None, fired.time)]);
    // "Level", open since 5 s, is known open at the capture's start.
    assert!(read
        .open_at_start
        .contains(&("Level".to_string(), LEVEL_FROM)));
    every_span_open_at_the_start_ends_in_the_capture_or_after(&read, capture.end);
}

/// A span a capture lists open at its start either ends in it, or was
/// still open when the capture ends: a recorder that skims never starts
/// a capture from a state that missed a span's end.
fn every_span_open_at_the_start_ends_in_the_capture_or_after(read: &Read, end: u64) {
    for open in &read.open_at_start {
        let still_open = match open.0.as_str() {
            "Level" => end < 15 * S,
            "Load" => end < LOAD.end,
            _ => false,
        };
        assert!(
            still_open || read.ended.contains(open),
            "{open:?} listed open at the start, ended before {} ms unseen",
            end / MS
        );
    }
}

#[test]
fn a_tick_triggers_capture_starts_where_its_open_spans_are_exact() {
    // The stall fires 100 ms into tick 663 (10.608 s): the window opens
    // at 8.708 s, after "Load" ended (8.304 s) and after the Catch-up near
    // 8 s that listed it open. The recorder reads no span (it skims), so
    // its capture starts at that Catch-up, with "Load" open and its end
    // in the capture.
    let triggers = vec!["tick > 100ms".parse::<Trigger>().unwrap()];
    let mut recorder = Recorder::new(settings(), triggers);
    run(&mut recorder, 14, &[663 * 16 * MS]);
    let capture = recorder.take().expect("a capture");
    assert!(capture.begin <= LOAD.end, "{} ms", capture.begin / MS);
    let read = read(&capture);
    assert_eq!((read.missed, read.damaged, read.unnamed), (0, 0, 0));
    assert!(read
        .open_at_start
        .contains(&("Load".to_string(), LOAD.start)));
    every_span_open_at_the_start_ends_in_the_capture_or_after(&read, capture.end);
}

#[test]
fn a_trigger_on_every_tick_makes_one_capture_per_cooldown_at_most() {
    let triggers = vec!["tick > 1ms".parse::<Trigger>().unwrap()];
    let settings = Settings {
        keep_ns: 4 * S,
        keep_bytes: 256 << 10,
        before_ns: S,
        after_ns: S,
        cooldown_ns: 10 * S,
        spacing_ns: 5 * S,
        max_capture_ns: 3 * S,
        max_capture_bytes: 512 << 10,
    };
    settings.check().unwrap();
    let mut recorder = Recorder::new(settings, triggers);
    run(&mut recorder, 60, &[]);
    let mut captures = Vec::new();
    while let Some(c) = recorder.take() {
        captures.push(c);
    }
    let stats = recorder.stats();
    // Every tick fired (3 750 ticks); one in each 10 s made a capture.
    assert!(stats.fired > 3_000, "{stats:?}");
    assert_eq!(captures.len(), 6, "{stats:?}");
    for c in &captures {
        assert!(c.bytes.len() <= settings.max_capture_bytes);
        assert!(c.end - c.begin <= settings.max_capture_ns);
        let read = read(c);
        assert_eq!((read.missed, read.damaged, read.unnamed), (0, 0, 0));
    }
    let (_, kept) = recorder.kept();
    assert!(kept <= settings.keep_bytes);
}

#[test]
fn a_gauge_crossing_fires_once_and_a_demand_captures_now() {
    let triggers = vec!["gauge(memory) > 500MB".parse::<Trigger>().unwrap()];
    let mut recorder = Recorder::new(settings(), triggers);
    run(&mut recorder, 12, &[]);
    let stats = recorder.stats();
    let capture = recorder
        .take()
        .unwrap_or_else(|| panic!("a capture: {stats:?}"));
    assert!(recorder.take().is_none());
    assert_eq!(capture.fired.len(), 1);
    // 1 MB a tick of 16 ms: tick 501 read 501 MB.
    assert_eq!(capture.fired[0].time, 501 * 16 * MS + 15 * MS);
    assert_eq!(recorder.stats().fired, 1);

    let mut recorder = Recorder::new(settings(), Vec::new());
    run(&mut recorder, 3, &[]);
    recorder.demand("a key");
    assert!(
        recorder.take().is_none(),
        "its window after is still to come"
    );
    recorder.end();
    let capture = recorder.take().expect("made whole at the stream's end");
    assert_eq!(capture.fired[0].trigger, None);
    assert_eq!(read(&capture).missed, 0);
}

#[test]
fn bad_triggers_name_their_position() {
    for (text, at, message) in [
        ("tock > 5ms", 0, "unknown \"tock\""),
        ("tick < 5ms", 5, "expected > (a duration over), found \"<\""),
        ("tick > 5MB", 7, "expected a duration"),
        ("overrun > 3", 8, "\"overrun\" takes no comparison"),
        ("span > 3ms", 4, "\"span\" needs a name"),
        ("tick(Main) > 3ms", 4, "\"tick\" takes no name"),
    ] {
        let error = text.parse::<Trigger>().unwrap_err();
        assert_eq!(error.at(), at, "{text}: {error}");
        assert!(error.to_string().starts_with(message), "{text}: {error}");
    }
}

#[test]
fn a_span_fires_while_still_open_as_a_catch_up_lists_it_and_its_mark_selects_it() {
    let triggers = vec!["span(Level) > 3s".parse::<Trigger>().unwrap()];
    let mut recorder = Recorder::new(settings(), triggers);
    run(&mut recorder, 20, &[]);
    let capture = recorder.take().expect("a capture");
    assert!(
        recorder.take().is_none(),
        "fired once, not again at its end"
    );
    let fired = &capture.fired[0];
    // Catch-ups come once a second: the first after 3 s open lists it.
    assert!(fired.time > LEVEL_FROM + 3 * S && fired.time <= LEVEL_FROM + 4 * S + 16 * MS);
    assert!(fired.what.starts_with("Level open for "), "{}", fired.what);
    let read = read(&capture);
    assert_eq!(
        read.marks,
        [(
            "span(Level) > 3s".to_string(),
            Some(("Level".to_string(), LEVEL_FROM)),
            fired.time
        )]
    );
}

#[test]
fn a_recorder_that_keeps_what_another_reader_read_captures_on_demand_alike() {
    let reader = std::cell::RefCell::new(Reader::new());
    let recorder = std::cell::RefCell::new(Recorder::new(settings(), Vec::new()));
    run_with(
        |frame, arrival| {
            let mut reader = reader.borrow_mut();
            reader.read_at(frame, arrival, |_, _| {}).unwrap();
            recorder.borrow_mut().keep(frame, reader.state());
        },
        |now| recorder.borrow_mut().now_with(now, reader.borrow().state()),
        4,
        &[],
    );
    let mut recorder = recorder.into_inner();
    let reader = reader.into_inner();
    recorder.demand_with("a key", reader.state());
    recorder.end();
    let capture = recorder.take().expect("a capture");
    let read = read(&capture);
    assert_eq!((read.missed, read.damaged, read.unnamed), (0, 0, 0));
    assert_eq!(read.marks[0].0, "on demand: a key");
    // The past it kept: 2 s before the demand at the end of 4 s.
    assert!(read.first_time <= 2 * S + 16 * MS, "{}", read.first_time);
}
