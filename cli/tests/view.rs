//! `typhon-live view FILE` driven like a user would: in a pseudo-terminal
//! (`script`, from util-linux), with keys typed into it. The screen is
//! rebuilt from what the program wrote (cursor moves and text, as
//! ratatui's crossterm backend writes them) and checked.

mod common;

use std::process::Command;

use common::{screen, temp, typhon};
use typhon_live_core::{Exporter, LaneKind, Lanes, Metadata, NameTable};

/// 40 ticks of 1 ms on a main lane, each a "Frame" span holding a
/// "Physics" span, except tick 20, which stalls for 50 ms in "LoadLevel".
fn trace_with_a_stall() -> Vec<u8> {
    let lanes = Lanes::<2, 1024>::new();
    let mut names: NameTable<8, 128> = NameTable::new();
    let lane = lanes
        .claim(names.intern("GameLoop").unwrap(), LaneKind::Main)
        .unwrap();
    let frame = names.intern("Frame").unwrap();
    let physics = names.intern("Physics").unwrap();
    let load = names.intern("LoadLevel").unwrap();
    let mut scratch = vec![0u8; 1 << 16];
    let meta = Metadata {
        ticks_per_second: 1_000_000,
        session_id: 0x7e57,
        process_name: "stall",
        ..Metadata::default()
    };
    let mut exporter: Exporter<'_, 2> = Exporter::new(meta, &mut scratch);
    exporter.attach().unwrap();
    let mut out = vec![0u8; exporter.min_block_buffer()];
    let mut stream = Vec::new();
    let mut at = 1_000;
    for t in 0..40u64 {
        let len = if t == 20 { 50_000 } else { 1_000 };
        lane.tick_start(t, at);
        let f = lane.begin(frame, at);
        let inner = lane.begin(if t == 20 { load } else { physics }, at + 100);
        lane.end(inner, at + len - 200, None);
        lane.end(f, at + len - 100, None);
        lane.tick_end(t, at + len - 50, t == 20);
        exporter.request_drain();
        while let Some(f) = exporter.poll(at + len, &lanes, &names, &mut out).unwrap() {
            stream.extend_from_slice(&out[..f.len]);
        }
        at += len;
    }
    exporter.stop();
    while let Some(f) = exporter.poll(at + 1, &lanes, &names, &mut out).unwrap() {
        stream.extend_from_slice(&out[..f.len]);
    }
    stream
}

#[test]
fn view_opens_a_file_paused_at_its_end_and_finds_the_stall_by_its_name() {
    if !cfg!(unix) {
        // Under wine (CI's Windows run) as on Windows: no pty.
        common::skipped("the terminal view test needs a pty (script, util-linux): Unix only");
        return;
    }
    if Command::new("script").arg("--version").output().is_err() {
        common::skipped("script (util-linux) not installed");
        return;
    }
    let path = temp("stall.tlt");
    std::fs::write(&path, trace_with_a_stall()).unwrap();
    let (rows, cols) = (40, 180);
    // Filter the span names to "load", then jump to its longest; quit.
    let keys: [(u64, &[u8]); 3] = [(1_500, b"/load\r"), (500, b"m"), (1_000, b"q")];
    let output = common::in_pty(&format!("view {}", path.display()), rows, cols, &keys);
    assert!(output.status.success());
    // The terminal is given back: the alternate screen is left at the end.
    let out = &output.stdout;
    let leave = b"\x1b[?1049l";
    assert!(
        out.windows(leave.len()).any(|w| w == leave),
        "the terminal was not restored"
    );
    let lines = screen(out, rows, cols);
    let shown = lines.join("\n");
    assert!(
        shown.contains(&format!("file {}", path.display())),
        "{shown}"
    );
    assert!(shown.contains("the whole file is shown"), "{shown}");
    // `/load`: the list narrowed to LoadLevel, its statistics (one span
    // of 49.7 ms); `m`: its tick, 20, numbered on the ruler, paused there.
    assert!(
        shown.contains("spans over the history matching \"load\""),
        "{shown}"
    );
    assert!(shown.contains("LoadLevel over the history"), "{shown}");
    assert!(shown.contains("count 1  total 49.700"), "{shown}");
    assert!(shown.contains("max 49.700 in tick 20 (m)"), "{shown}");
    assert!(shown.contains("PAUSED at"), "{shown}");
    assert!(shown.contains("┃20"), "{shown}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn view_refuses_a_file_that_is_not_a_trace() {
    let path = temp("not-a-trace.tlt");
    std::fs::write(&path, b"HTTP/1.1 200 OK\r\n\r\nnot a trace").unwrap();
    let out = typhon().arg("view").arg(&path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("is not a readable typhon-live trace"),
        "{stderr}"
    );
    let _ = std::fs::remove_file(&path);
}
