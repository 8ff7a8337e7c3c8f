//! Each lane's thread's call stack (FORMAT.md, "Stacks"): sampled while a
//! profiler runs, walked off the sampled thread, interned as a tree the
//! stream defines, and symbolized; a reader of the trace file finds the
//! function a thread spun in, a few frames deep, and its callers. On
//! Linux, where the system allows `perf_event_open`; elsewhere none may
//! appear.

use std::hint::black_box;
use std::time::{Duration, Instant};

use object::{Object, ObjectSymbol};
use typhon_live_core::{LaneKind, Metadata, NodeId, Unwinding};
use typhon_live_reader::{frames, Reader, State, Update};
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::{runtime, Profiler};

#[inline(never)]
fn spin_outer(until: Instant) -> u64 {
    black_box(spin_middle(until)).wrapping_add(1)
}

#[inline(never)]
fn spin_middle(until: Instant) -> u64 {
    black_box(spin_innermost(until)).wrapping_mul(3)
}

#[inline(never)]
fn spin_innermost(until: Instant) -> u64 {
    let mut x = 1u64;
    while Instant::now() < until {
        for _ in 0..1000 {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    x
}

/// A stack's frames as text, innermost first: each address's frames
/// (inlined ones too), or the address while it has none.
fn frames_of(state: &State, node: NodeId) -> Vec<String> {
    (state.stacks().frames(node))
        .map(|frame| match frame {
            Ok(name) => state.names().show(name).into_owned(),
            Err(address) => format!("{address:#x}"),
        })
        .collect()
}

#[test]
fn a_thread_that_spins_three_calls_deep_is_found_in_its_stacks() {
    let trace = std::env::temp_dir().join(format!("typhon-live-stacks-{}.tlt", std::process::id()));
    let config = ProfilerConfig {
        trace: Some(trace.clone()),
        stack_sample_hz: 1000,
        ..ProfilerConfig::default()
    };
    let profiler = Profiler::start(&config, &Metadata::default()).unwrap();
    let work = runtime::intern("work").unwrap();
    let spinner = std::thread::spawn(move || {
        runtime::register_thread("spinner", LaneKind::Worker);
        let _span = runtime::span(work);
        black_box(spin_outer(Instant::now() + Duration::from_millis(400)));
        // The symbolizer's answers, before the thread and its lane go.
        std::thread::sleep(Duration::from_millis(300));
    });
    spinner.join().unwrap();
    // The last symbols: the symbolizer answers within a cycle or so once
    // its debug information is loaded.
    std::thread::sleep(Duration::from_millis(500));
    let stats = profiler.stats();
    profiler.stop().unwrap();
    let bytes = std::fs::read(&trace).unwrap();
    let _ = std::fs::remove_file(&trace);

    let mut reader = Reader::new();
    let mut samples = Vec::new();
    let damage = frames(&bytes, |frame| {
        reader.read(frame, |_, update| {
            if let Update::StackSample(sample) = update {
                samples.push(sample);
            }
        })
    });
    assert!(damage.is_empty(), "{damage:?}");
    let state = reader.state();
    eprintln!(
        "stacks: {} samples, {} nodes, {} symbols; refused {}, lost {}",
        samples.len(),
        state.stacks().len(),
        state.stacks().symbols(),
        stats.stacks_refused,
        stats.stacks_lost
    );
    if !cfg!(target_os = "linux") {
        assert!(samples.is_empty());
        return;
    }
    if stats.stacks_refused > 0 {
        let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid");
        assert!(
            paranoid.is_ok_and(|p| p.trim().parse::<i32>().is_ok_and(|p| p > 2)),
            "refused where perf_event_paranoid allows it"
        );
        eprintln!("skipped: perf_event_open refused here");
        return;
    }
    // 400 ms on a CPU at 1 kHz, on a loaded 2-core machine.
    assert!(samples.len() >= 100, "{} samples", samples.len());
    assert_eq!(reader.state().tally().stack_samples_undefined, 0);
    let lane_of = |name: &str| {
        let lanes = state.lanes();
        let lane = lanes
            .values()
            .find(|l| state.names().show(l.info.name) == name);
        lane.map(|l| l.info.id)
    };
    // The spinner's lane may be freed by now: its samples are those whose
    // innermost frames hold the spin.
    let _ = lane_of("spinner");
    let stacks: Vec<Vec<String>> = samples.iter().map(|s| frames_of(state, s.node)).collect();
    let spun = stacks
        .iter()
        .filter(|f| f.iter().any(|f| f.contains("spin_innermost")))
        .collect::<Vec<_>>();
    eprintln!("a stack: {:#?}", spun.first());
    assert!(
        spun.len() * 10 >= samples.len() * 8,
        "{} of {}",
        spun.len(),
        samples.len()
    );
    // Its callers are there too, in order, outermost last.
    let whole = spun.iter().filter(|frames| {
        let at = |name: &str| frames.iter().position(|f| f.contains(name));
        matches!(
            (at("spin_innermost"), at("spin_middle"), at("spin_outer")),
            (Some(a), Some(b), Some(c)) if a < b && b < c
        )
    });
    assert!(whole.count() * 10 >= spun.len() * 8);
    assert!(
        samples
            .iter()
            .all(|s| s.unwinding == Unwinding::UnwindTables
                || s.unwinding == Unwinding::FramePointers)
    );
    // The module map names this test's own file where its code lies, and
    // the bias places the spin in the file as its symbol table does.
    let here = spin_innermost as *const () as u64;
    let own = state
        .stacks()
        .module_of(here)
        .expect("a module holds the test's code");
    let exe = std::env::current_exe().unwrap();
    assert_eq!(std::path::Path::new(&own.path), exe.as_path());
    assert_eq!(own.build_id.len(), 20, "a GNU build id");
    let file = std::fs::read(&exe).unwrap();
    let elf = object::File::parse(&*file).unwrap();
    let symbol = (elf.symbols())
        .find(|s| s.name().is_ok_and(|n| n.contains("spin_innermost")))
        .expect("the test's symbol table names the spin");
    assert_eq!(own.file_address(here), symbol.address());
}

/// A source with `nodes` stack nodes in one chain of 100 (each a root's
/// descendant, 100 deep at most) and three frame symbols.
struct ManyNodes {
    names: typhon_live_core::NameTable<4, 64>,
    nodes: u32,
}

impl typhon_live_core::NameSource for ManyNodes {
    fn count(&self) -> u32 {
        self.names.count()
    }
    fn get(&self, id: u32) -> Option<&str> {
        self.names.get(id)
    }
    fn stack_node_count(&self) -> u32 {
        self.nodes
    }
    fn stack_node(&self, id: NodeId) -> Option<typhon_live_core::StackNode> {
        (id < self.nodes).then(|| typhon_live_core::StackNode {
            parent: (id % 100 != 0).then(|| id - 1),
            address: 0x1000 + u64::from(id),
        })
    }
    fn frame_symbol_count(&self) -> u32 {
        3
    }
    fn frame_symbol(&self, index: u32) -> Option<typhon_live_core::FrameSymbol<'_>> {
        const FRAMES: [u32; 1] = [0];
        (index < 3).then(|| typhon_live_core::FrameSymbol {
            address: 0x1000 + u64::from(index),
            frames: &FRAMES,
        })
    }
}

#[test]
fn the_exporter_defines_every_node_a_frames_worth_at_a_time_and_again_after_a_drop() {
    use typhon_live_core::stacks::MAX_NODES_PER_FRAME;
    use typhon_live_core::{Exporter, Lanes};

    static LANES: Lanes<1, 64> = Lanes::new();
    let mut names = typhon_live_core::NameTable::new();
    names.intern("main").unwrap();
    let mut source = ManyNodes {
        names,
        nodes: 70_000,
    };
    let meta = Metadata {
        ticks_per_second: 1_000_000_000,
        ..Metadata::default()
    };
    let mut scratch = [0u8; 4096];
    let mut exporter: Exporter<'_, 1> = Exporter::new(meta, &mut scratch);
    exporter.attach().unwrap();
    let mut out = vec![0u8; 4 << 20];
    let mut stream = Vec::new();
    let mut dropped_one = false;
    let mut poll = |exporter: &mut Exporter<'_, 1>, source: &ManyNodes, stream: &mut Vec<u8>| {
        while let Some(frame) = exporter.poll(10, &LANES, source, &mut out).unwrap() {
            // The first stack Definitions is lost on its way: it is
            // written again.
            let defines_stacks = frame.kind == typhon_live_core::FrameKind::Definitions;
            if defines_stacks && !dropped_one {
                dropped_one = true;
                assert!(exporter.frame_dropped());
                continue;
            }
            stream.extend_from_slice(&out[..frame.len]);
        }
    };
    poll(&mut exporter, &source, &mut stream);
    // Nodes interned since: told next.
    source.nodes = 70_100;
    poll(&mut exporter, &source, &mut stream);
    assert!(dropped_one);

    let mut reader = Reader::new();
    let mut per_frame = Vec::new();
    let damage = frames(&stream, |frame| {
        let mut nodes = 0u32;
        let read = reader.read(frame, |_, update| {
            if let Update::StackNode { .. } = update {
                nodes += 1;
            }
        });
        if nodes > 0 {
            per_frame.push(nodes);
        }
        read
    });
    assert!(damage.is_empty(), "{damage:?}");
    // The Init holds a frame's worth, the rest follow, the lost frame's
    // nodes again, then the new ones.
    assert_eq!(
        per_frame,
        [MAX_NODES_PER_FRAME, 70_000 - MAX_NODES_PER_FRAME, 100]
    );
    let stacks = reader.state().stacks();
    assert_eq!(stacks.len(), 70_100);
    assert_eq!(stacks.symbols(), 3);
    assert_eq!(stacks.addresses(70_099).count(), 100);
    assert_eq!(reader.state().tally().refused.stack_nodes, 0);
}
