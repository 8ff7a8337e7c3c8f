//! The browser viewer, end to end, in a real browser: `demo --web`
//! served to headless Chromium (WebDriver), the page's state read through
//! its test hook (`window.typhon.summary()`), the person's gestures sent
//! as WebDriver actions. Skipped, with the reason, where Chromium is not
//! installed; `.ci/run` installs it and fails on the skip.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{listed_at, middle, serve_web, skipped, typhon};
use serde_json::Value;
use typhon_live_tests::browser::{colours, Browser};

const HOOK: &str = "return window.typhon ? window.typhon.summary() : null;";

/// One browser at a time: two headless Chromiums and a demo on two cores
/// would make every wait here a race.
static ONE_BROWSER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_browser() -> std::sync::MutexGuard<'static, ()> {
    ONE_BROWSER.lock().unwrap_or_else(|p| p.into_inner())
}

/// Headless Chromium `width` × `height` pixels, with this test's turn
/// held; `None`, said as a skip, off Linux (under wine its binary is
/// found and cannot run) or where it is not installed.
fn chromium(width: u32, height: u32) -> Option<(std::sync::MutexGuard<'static, ()>, Browser)> {
    if !cfg!(target_os = "linux") {
        skipped("the browser test runs Chromium on Linux only");
        return None;
    }
    let turn = one_browser();
    match Browser::start(width, height) {
        Ok(browser) => Some((turn, browser)),
        Err(why) => {
            skipped(&why);
            None
        }
    }
}
const WAIT: Duration = Duration::from_secs(40);

/// The strings of a JSON list.
fn names_in(list: &Value) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item.as_str().map(str::to_owned))
        .collect()
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item[key].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn the_demo_is_watched_live_in_chromium() {
    let Some((_turn, browser)) = chromium(1400, 1000) else {
        return;
    };
    // It leaks 2 MiB a second from one function, on purpose.
    let (_demo, url) = serve_web(&[
        "demo",
        "--web",
        "--live",
        "0",
        "--duration",
        "120",
        "--leak",
        "2097152",
    ]);
    browser.open(&url).unwrap();

    // The page loads, connects, and its model holds the demo's lanes and
    // span names.
    let state = browser
        .wait_for(HOOK, WAIT, |s| {
            let lanes = names(&s["page"]["summary"]["lanes"], "name");
            // The list is over sealed history (a chunk every 50 ms), and
            // the hook's summary may be an answer older than the bars.
            let spans = names(&s["page"]["summary"]["span_stats"], "name");
            lanes.contains(&"Sim".to_owned())
                && lanes.iter().any(|l| l.starts_with("worker-"))
                && s["page"]["bars"].as_u64() > Some(0)
                && spans.contains(&"Tick".to_owned())
        })
        .unwrap_or_else(|e| panic!("the page did not show the demo's lanes: {e}"));
    let page = &state["page"];
    assert_eq!(
        page["summary"]["connection"]["state"], "connected",
        "{page}"
    );
    let spans = names(&page["summary"]["span_stats"], "name");
    for name in ["Tick", "Sim.AI", "Query<Collider>"] {
        assert!(spans.contains(&name.to_owned()), "{name} not in {spans:?}");
    }

    // The memory panel finds the leak: its site first among the growing
    // ones, named by the function that leaks, its bytes climbing; the
    // memory strip drawn above the gauges (a reading every 100 ms, so a
    // 100 ms window holds one most of the time, not every frame).
    let leaking = |s: &Value| {
        let listed = &s["page"]["sites_listed"][0];
        listed[0]
            .as_str()
            .is_some_and(|l| l.ends_with("demo::cache_replay_frame"))
            .then(|| listed[1].as_u64().unwrap_or(0))
    };
    let found = browser
        .wait_for(HOOK, WAIT, |s| {
            leaking(s).is_some() && s["page"]["memory_strip"].as_u64() > Some(0)
        })
        .unwrap_or_else(|e| panic!("the leak's site was not listed first, or no strip: {e}"));
    let memory = &found["page"]["summary"]["memory"];
    assert!(memory["live"].as_u64() > Some(1 << 20), "{memory}");
    assert!(
        found["page"]["memory_strip"].as_u64() > Some(0),
        "{}",
        found["page"]
    );
    let grown = browser
        .wait_for(HOOK, Duration::from_secs(10), |s| {
            leaking(s) > leaking(&found).map(|b| b + (1 << 20))
        })
        .unwrap_or_else(|e| panic!("the leak's bytes did not climb: {e}"));
    let memory_png = browser.screenshot().unwrap();
    // The span the leak runs in is charged its bytes.
    let replay = (grown["page"]["summary"]["span_stats"]
        .as_array()
        .into_iter()
        .flatten())
    .find(|s| s["name"] == "Replay.Cache")
    .cloned()
    .unwrap_or_default();
    assert!(
        replay["allocated_bytes"].as_u64() > Some(1 << 20),
        "{replay}"
    );
    let stack = &grown["page"]["summary"]["memory"]["sites_by_growth"][0]["stack"];
    assert!(
        names_in(stack).iter().any(|f| f.contains("simulate")),
        "{stack}"
    );

    // Live, the wheel zooms out at the right edge, which stays now: 2 s
    // across, wide enough for the stall beside the ticks around it.
    let window = |s: &Value| {
        let w = &s["page"]["window"];
        w["end"].as_u64().unwrap_or(0) - w["start"].as_u64().unwrap_or(0)
    };
    // Where the timeline is now: the memory panel took room below it.
    let (x, y) = middle(&grown["page"]["timeline"]);
    browser.wheel(x, y, 1500.0).unwrap();
    browser
        .wait_for(HOOK, Duration::from_secs(10), |s| window(s) > 1_500_000_000)
        .unwrap_or_else(|e| panic!("the wheel did not zoom out live: {e}"));

    // The stall (every 10 s, 1.2 s long): an open span growing on the
    // timeline, then its tick overrunning.
    let open = |s: &Value| -> f64 {
        s["page"]["summary"]["open_spans"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|o| o["span"] == "Sim.AI")
            .filter_map(|o| o["open_ms"].as_f64())
            .fold(0.0, f64::max)
    };
    // Seen early enough (the stall lasts 1.2 s) to see it grow after. An
    // open span is known from the Catch-up the demo sends every second,
    // so about one stall in two is first seen after 700 ms: up to seven
    // stalls are waited for (one every 10 s), not four.
    let stalled = browser
        .wait_for(HOOK, Duration::from_secs(75), |s| {
            (100.0..700.0).contains(&open(s)) && s["page"]["open_bars"].as_u64() > Some(0)
        })
        .unwrap_or_else(|e| panic!("no stall seen open: {e}"));
    let grown = browser
        .wait_for(HOOK, Duration::from_secs(5), |s| {
            open(s) > open(&stalled) + 30.0
        })
        .unwrap_or_else(|e| panic!("the open span did not grow: {e}"));
    assert!(open(&grown) > open(&stalled));
    // How it spends its time so far, from the Sim thread's samples: the
    // demo's stall sleeps.
    let stall_cpu = (grown["page"]["summary"]["open_spans"]
        .as_array()
        .into_iter())
    .flatten()
    .find(|o| o["span"] == "Sim.AI")
    .and_then(|o| o["cpu"].as_str())
    .unwrap_or_default()
    .to_owned();
    assert!(stall_cpu.contains("off-CPU (voluntary)"), "{stall_cpu:?}");
    let stall_png = browser.screenshot().unwrap();
    // Pause, by clicking its button, while the stall is open: the
    // picture stays, its open span too, while frames keep arriving.
    let state = browser.run(HOOK).unwrap();
    let (x, y) = middle(&state["page"]["pause_button"]);
    browser.click(x, y).unwrap();
    let paused = browser
        .wait_for(HOOK, Duration::from_secs(10), |s| {
            s["page"]["paused"] == true
        })
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let later = browser.run(HOOK).unwrap();
    assert_eq!(later["page"]["paused"], true);
    assert_eq!(
        later["page"]["window"], paused["page"]["window"],
        "the picture moved"
    );
    assert_eq!(
        later["page"]["bars"], paused["page"]["bars"],
        "the picture changed"
    );
    assert!(
        later["page"]["frames"].as_u64() > paused["page"]["frames"].as_u64(),
        "no frames arrived while paused"
    );
    // The model goes on: the stalled tick ends, and overran.
    browser
        .wait_for(HOOK, WAIT, |s| {
            s["page"]["summary"]["overruns"].as_u64() > Some(0)
        })
        .unwrap_or_else(|e| panic!("the stalled tick was not counted as an overrun: {e}"));
    // The paused picture holds what came before the pause, while the
    // stalled tick was still open: resume, and pause again to hold it.
    for want in [false, true] {
        browser.click(x, y).unwrap();
        browser
            .wait_for(HOOK, Duration::from_secs(10), |s| {
                s["page"]["paused"] == want
            })
            .unwrap_or_else(|e| panic!("the pause button did not make paused {want}: {e}"));
    }
    let later = browser.run(HOOK).unwrap();

    // The wheel over the timeline zooms out around the cursor, far
    // enough to show the overrunning tick on the ruler; then in.
    let (x, y) = middle(&later["page"]["timeline"]);
    let before = window(&later);
    browser.wheel(x, y, 3000.0).unwrap();
    let out = browser
        .wait_for(HOOK, Duration::from_secs(10), |s| window(s) > before * 100)
        .unwrap_or_else(|e| panic!("the wheel did not zoom out from {before} ns: {e}"));
    assert!(
        out["page"]["overrun_ticks"].as_u64() > Some(0),
        "no overrun drawn: {}",
        out["page"]
    );
    browser.wheel(x, y, -300.0).unwrap();
    browser
        .wait_for(HOOK, Duration::from_secs(10), |s| window(s) < window(&out))
        .unwrap_or_else(|e| panic!("the wheel did not zoom in: {e}"));

    // Clicking a name lists its statistics over the history: the stall
    // is its longest.
    let state = browser.run(HOOK).unwrap();
    let (x, y) = listed_at(&state, "Sim.AI");
    browser.click(x, y).unwrap();
    let selected = browser
        .wait_for(HOOK, Duration::from_secs(10), |s| {
            s["page"]["selected"]["name"] == "Sim.AI"
        })
        .unwrap_or_else(|e| panic!("clicking Sim.AI did not select it: {e}"));
    let stats = &selected["page"]["selected"];
    assert!(stats["count"].as_u64() > Some(100), "{stats}");
    assert!(
        stats["max"].as_u64() > Some(1_100_000_000),
        "the stall is not its longest: {stats}"
    );
    assert!(stats["p50"].as_u64() < Some(10_000_000), "{stats}");
    assert_eq!(stats["longest"], 10, "{stats}");
    // What its spans allocated (each tick's channel to the workers).
    let allocated = stats["allocated"].as_str().unwrap_or_default();
    assert!(allocated.starts_with("allocated "), "{stats}");
    assert!(allocated.ends_with(" a span"), "{stats}");
    // Its share of CPU, and the stall's sentence.
    let longest_cpu = stats["cpu"][1].as_str().unwrap_or_default();
    assert!(longest_cpu.starts_with("longest: Sim.AI: 1.2"), "{stats}");
    assert!(longest_cpu.contains("s off-CPU (voluntary)"), "{stats}");
    // Its longest occurrence, clicked, is shown: the stall, with room
    // either side.
    let (x, y) = middle(&stats["longest_at"][0]);
    browser.click(x, y).unwrap();
    let shown = browser
        .wait_for(HOOK, Duration::from_secs(10), |s| {
            (3_000_000_000..4_000_000_000).contains(&window(s))
        })
        .unwrap_or_else(|e| panic!("the longest was not shown: {e}"));
    assert!(
        shown["page"]["overrun_ticks"].as_u64() > Some(0),
        "{}",
        shown["page"]
    );
    // Every lane of the demo is sampled: each has its CPU strip.
    assert!(
        shown["page"]["cpu_strips"].as_u64() >= Some(2),
        "{}",
        shown["page"]
    );
    // Paused there: the list counts over the pinned history, as the
    // selected name's statistics do (once both were drawn again).
    let agreed = browser
        .wait_for(HOOK, Duration::from_secs(10), |s| {
            let listed = s["page"]["listed"].as_array().cloned().unwrap_or_default();
            let row = listed.iter().find(|row| row[0] == "Sim.AI").cloned();
            s["page"]["paused"] == true
                && row.is_some_and(|row| row[2] == s["page"]["selected"]["count"])
        })
        .unwrap_or_else(|e| panic!("the list and the selection disagree: {e}"));
    assert!(
        agreed["page"]["selected"]["count"].as_u64() > Some(100),
        "{}",
        agreed["page"]["selected"]
    );
    let selected_png = browser.screenshot().unwrap();

    // c: the page's recorder captures the past it kept and the next 5 s,
    // then offers the file as a download.
    browser.type_text("c").unwrap();
    let captured = browser
        .wait_for(HOOK, Duration::from_secs(20), |s| {
            s["page"]["captures"].as_u64() >= Some(1)
        })
        .unwrap_or_else(|e| panic!("c made no capture: {e}"));
    let notice = captured["page"]["summary"]["notice"].as_str().unwrap_or("");
    assert!(notice.starts_with("captured "), "{notice}");

    // The picture is a picture: many colours, and kept for a person to
    // look at.
    for (png, name) in [
        (stall_png, "stall"),
        (selected_png, "selected"),
        (memory_png, "memory"),
    ] {
        let path = std::env::temp_dir().join(format!("typhon-live-web-{name}.png"));
        std::fs::write(&path, &png).unwrap();
        let seen = colours(&png, 64).unwrap();
        assert!(seen >= 16, "{seen} colours in {}", path.display());
    }
}

/// The flame graph's bar of a function whose name holds `function`, as
/// the hook reports it: (depth, middle x as a share of the width).
fn flame_bar(state: &Value, function: &str) -> Option<(u64, f64)> {
    let bars = state["page"]["flame"]["bars"].as_array()?;
    bars.iter()
        .filter(|b| b[0].as_str().is_some_and(|t| t.contains(function)))
        .filter_map(|b| {
            let (x0, x1) = (b[2].as_f64()?, b[3].as_f64()?);
            Some((b[1].as_u64()?, (x0 + x1) / 2.0, x1 - x0))
        })
        // The widest, where a function is reached by several paths.
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .map(|(depth, x, _)| (depth, x))
}

/// How old the newest sample the live flame graph holds is, read by the
/// page itself every 200 ms for 20 s (the browser's clock against the
/// sample's time, placed on the Unix clock by the reader): an upper
/// bound of the latency from a sample to its frame in the graph, with
/// the worker's refold every 500 ms (`FLAME_EVERY`), the reader, the
/// worker's answer to the page and the hook's own cost all in it. It must
/// stay within 1 s at p99 (docs/PERFORMANCE.md, "Call stacks").
#[test]
fn a_sample_reaches_the_live_flame_graph_within_a_second() {
    let Some((_turn, browser)) = chromium(1400, 1000) else {
        return;
    };
    let (_demo, url) = serve_web(&["demo", "--web", "--live", "0", "--duration", "60"]);
    browser.open(&url).unwrap();
    browser
        .wait_for(HOOK, WAIT, |s| {
            s["page"]["flame"]["newest_unix_ms"].as_f64().is_some()
        })
        .unwrap_or_else(|e| panic!("no flame graph of the live stacks: {e}"));
    // Read in the page, not through WebDriver: its round trip, slow
    // under load, would be counted and would thin the reads out.
    browser
        .run(
            "window.ages = []; \
             const read = () => { \
                 const s = window.typhon.summary(); \
                 const newest = s.page.flame && s.page.flame.newest_unix_ms; \
                 if (newest) { window.ages.push(Date.now() - newest); } \
             }; \
             window.reading = setInterval(read, 200); \
             setTimeout(() => clearInterval(window.reading), 20000); \
             return null;",
        )
        .unwrap();
    std::thread::sleep(Duration::from_secs(21));
    let ages = browser.run("return window.ages;").unwrap();
    let mut ages: Vec<f64> = (ages.as_array().into_iter().flatten())
        .filter_map(Value::as_f64)
        .collect();
    ages.sort_by(f64::total_cmp);
    assert!(ages.len() >= 50, "{} reads: {ages:?}", ages.len());
    let at = |q: f64| ages[((ages.len() - 1) as f64 * q).round() as usize];
    eprintln!(
        "the newest sample in the live flame graph, {} reads: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        ages.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    );
    assert!(at(0.99) <= 1000.0, "{ages:?}");
}

#[test]
fn the_demos_spin_stall_is_found_by_its_function() {
    let Some((_turn, browser)) = chromium(1400, 1000) else {
        return;
    };
    let (_demo, url) = serve_web(&[
        "demo",
        "--web",
        "--live",
        "0",
        "--duration",
        "90",
        "--stall-kind",
        "spin",
    ]);
    browser.open(&url).unwrap();
    // A stall seen open names its hottest function so far, from the Sim
    // thread's stacks, sampled while it spins.
    let hottest = |s: &Value| -> Option<String> {
        let open = s["page"]["summary"]["open_spans"].as_array()?;
        let stall = open.iter().find(|o| o["span"] == "Sim.AI")?;
        stall["hottest"].as_str().map(str::to_owned)
    };
    let stalled = browser
        .wait_for(HOOK, Duration::from_secs(60), |s| {
            hottest(s).is_some_and(|h| h.contains("evaluate_route"))
        })
        .unwrap_or_else(|_| {
            let last = browser.run(HOOK).unwrap_or_default();
            panic!(
                "no stall named its hottest function; open spans {}, stacks ticked {}, flame {}",
                last["page"]["summary"]["open_spans"],
                last["page"]["stack_ticks"],
                last["page"]["flame"]
            )
        });
    eprintln!("the stall, open: {:?}", hottest(&stalled));
    // Once it ended: Sim.AI selected, its spans' flame graph has the spin
    // as the function that ran most, three calls deep.
    browser
        .wait_for(HOOK, Duration::from_secs(10), |s| {
            s["page"]["summary"]["overruns"].as_u64() > Some(0)
        })
        .unwrap_or_else(|e| panic!("the stalled tick did not end: {e}"));
    // Paused, so that the list holds still under the pointer.
    let state = browser.run(HOOK).unwrap();
    let (x, y) = middle(&state["page"]["pause_button"]);
    browser.click(x, y).unwrap();
    let state = browser
        .wait_for(HOOK, Duration::from_secs(10), |s| {
            s["page"]["paused"] == true
        })
        .unwrap_or_else(|e| panic!("the pause button did not pause: {e}"));
    let (x, y) = listed_at(&state, "Sim.AI");
    browser.click(x, y).unwrap();
    let folded = browser
        .wait_for(HOOK, Duration::from_secs(15), |s| {
            let flame = &s["page"]["flame"];
            flame["title"] == "spans of Sim.AI"
                && flame["hottest"][0]
                    .as_str()
                    .is_some_and(|f| f.ends_with("evaluate_route"))
        })
        .unwrap_or_else(|_| {
            let last = browser.run(HOOK).unwrap_or_default();
            let flame = &last["page"]["flame"];
            panic!(
                "the flame graph of Sim.AI did not find the spin: {} {} {} {}",
                flame["title"], flame["samples"], flame["hottest"], flame["top"]
            )
        });
    let flame = &folded["page"]["flame"];
    assert!(flame["samples"].as_u64() > Some(500), "{flame}");
    let depth = |function: &str| flame_bar(&folded, function).map(|b| b.0);
    let (outer, middle_depth, inner) = (
        depth("plan_paths"),
        depth("score_candidates"),
        depth("evaluate_route"),
    );
    assert!(
        outer.is_some() && outer < middle_depth && middle_depth < inner,
        "{flame}"
    );
    // Its longest span shown: the stall, its code folded alone; its
    // hottest function clicked outlines it, the span whose samples ran
    // it.
    let (x, y) = middle(&folded["page"]["selected"]["longest_at"][0]);
    browser.click(x, y).unwrap();
    let shown = browser
        .wait_for(HOOK, Duration::from_secs(10), |s| {
            let window = &s["page"]["window"];
            let length =
                window["end"].as_u64().unwrap_or(0) - window["start"].as_u64().unwrap_or(0);
            length > 1_000_000_000
                && s["page"]["flame"]["title"] == "one span of Sim.AI"
                && s["page"]["flame"]["hottest_at"].is_array()
        })
        .unwrap_or_else(|e| panic!("the longest span was not shown: {e}"));
    let stall = &shown["page"]["flame"];
    assert!(
        stall["hottest"][0]
            .as_str()
            .is_some_and(|f| f.ends_with("evaluate_route"))
            && stall["hottest"][1].as_f64() > Some(0.4),
        "{stall}"
    );
    let (x, y) = middle(&shown["page"]["flame"]["hottest_at"]);
    browser.click(x, y).unwrap();
    let marked = browser
        .wait_for(HOOK, Duration::from_secs(10), |s| {
            s["page"]["flame"]["marked_spans"].as_u64() > Some(0)
        })
        .unwrap_or_else(|e| panic!("clicking the spin's frame outlined no span: {e}"));
    assert!(
        marked["page"]["stack_ticks"].as_u64() > Some(0),
        "no sample ticked on a strip: {}",
        marked["page"]
    );
    let png = browser.screenshot().unwrap();
    let path = std::env::temp_dir().join("typhon-live-web-flame.png");
    std::fs::write(&path, &png).unwrap();
    eprintln!("screenshot: {}", path.display());
    assert!(colours(&png, 64).unwrap() >= 16);
}

#[test]
fn a_recorded_trace_is_read_whole_by_the_page_and_shown_paused_at_its_end() {
    let Some((_turn, browser)) = chromium(1200, 700) else {
        return;
    };
    let trace = common::temp("web-view.tlt");
    let recorded = typhon()
        .args([
            "demo",
            "--no-view",
            "--live",
            "0",
            "--duration",
            "2",
            "--trace",
        ])
        .arg(&trace)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(recorded.success());
    // What `view --json` reads of the file: the page must read the same.
    let json = typhon()
        .arg("view")
        .arg(&trace)
        .arg("--json")
        .output()
        .unwrap();
    let expected: Value = serde_json::from_slice(&json.stdout).unwrap();
    let (_view, url) = serve_web(&["view", trace.to_str().unwrap(), "--web"]);
    browser.open(&url).unwrap();
    // Read to its end, and drawn there: the window ends at the file's last
    // time (the demo ran 2 s).
    let state = browser
        .wait_for(HOOK, WAIT, |s| {
            s["page"]["summary"]["connection"]["state"] == "file"
                && s["page"]["window"]["end"].as_u64() > Some(1_000_000_000)
        })
        .unwrap_or_else(|e| panic!("the page did not read the file to its end: {e}"));
    let page = &state["page"];
    assert_eq!(page["paused"], true, "{page}");
    assert_eq!(page["summary"]["events"], expected["events"]);
    assert_eq!(page["summary"]["frames"], expected["frames"]);
    assert_eq!(
        page["summary"]["history"]["records"],
        expected["history"]["records"]
    );
    let _ = std::fs::remove_file(&trace);
}

/// A capture of the demo's stall, written by the recorder in the demo's
/// process, opens in the browser paused on its trigger: the stalled tick
/// shown, the AI system's span selected, the trigger drawn.
#[test]
fn a_capture_opens_in_the_browser_on_its_trigger() {
    let Some((_turn, browser)) = chromium(1400, 800) else {
        return;
    };
    let dir = common::temp("web-captures");
    let _ = std::fs::remove_dir_all(&dir);
    let ran = typhon()
        .args([
            "demo",
            "--no-view",
            "--live",
            "0",
            "--duration",
            "13",
            "--threads",
            "2",
        ])
        .env("TYPHON__PROFILER__RECORDER__DIR", &dir)
        .env("TYPHON__PROFILER__RECORDER__ON", "tick > 100ms")
        // Without stacks sampled: their first tick then takes about
        // 110 ms in CI, a capture beside the stall's.
        .env("TYPHON__PROFILER__STACKSAMPLEHZ", "0")
        .env("TYPHON__PROFILER__RECORDER__BEFORE", "1s")
        .env("TYPHON__PROFILER__RECORDER__AFTER", "2s")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(ran.success());
    let capture = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .expect("the stall at 10 s made a capture");
    let (_view, url) = serve_web(&["view", capture.to_str().unwrap(), "--web"]);
    browser.open(&url).unwrap();
    let state = browser
        .wait_for(HOOK, WAIT, |s| {
            s["page"]["summary"]["connection"]["state"] == "file"
                && s["page"]["triggers"]
                    .as_array()
                    .is_some_and(|t| !t.is_empty())
                && !s["page"]["selected"].is_null()
        })
        .unwrap_or_else(|e| panic!("the page did not open the capture on its trigger: {e}"));
    let page = &state["page"];
    assert_eq!(page["paused"], true, "{page}");
    assert_eq!(page["triggers"][0][0], "tick > 100ms", "{page}");
    assert_eq!(page["selected"]["name"], "Sim.AI", "{page}");
    // The stalled tick, 1.2 s, is in the window with room around it.
    let window = &page["window"];
    let length = window["end"].as_u64().unwrap() - window["start"].as_u64().unwrap();
    assert!(length >= 1_200_000_000, "{window}");
    let screenshot = std::env::temp_dir().join("typhon-live-capture.png");
    if let Ok(png) = browser.screenshot() {
        let _ = std::fs::write(&screenshot, png);
        eprintln!("screenshot: {}", screenshot.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_relays_browser_viewer_is_read_over_https_by_a_public_name() {
    if !cfg!(target_os = "linux") {
        return skipped("the browser test runs Chromium on Linux only");
    }
    let _turn = one_browser();
    let dir = common::temp("web-https");
    std::fs::create_dir_all(&dir).unwrap();
    // The relay's certificate is signed by a CA Chromium does not know;
    // Chromium is told to accept its key, and that the public name
    // `typhon.test` is 127.0.0.1.
    let authority = typhon_live_tests::tls::Authority::new();
    let (cert, key) = authority.write_server(&dir);
    let browser = match Browser::start_with(
        1000,
        600,
        &[
            format!(
                "--ignore-certificate-errors-spki-list={}",
                authority.spki_sha256_base64()
            ),
            "--host-resolver-rules=MAP typhon.test 127.0.0.1".to_owned(),
        ],
    ) {
        Ok(browser) => browser,
        Err(why) => return skipped(&why),
    };
    let (demo, addr) = common::spawn_demo("120", "1");
    let _demo = common::Killed(demo);
    let (_relay, url) = serve_web(&[
        "relay",
        "--source",
        &format!("alpha={addr}"),
        "--web",
        "0",
        "--tls",
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
        "--public-host",
        "typhon.test",
        "--duration",
        "120",
    ]);
    assert!(url.starts_with("https://typhon.test:"), "{url}");
    browser.open(&url).unwrap();
    // Loaded over HTTPS by that name, and its WebSocket (wss://, the
    // Origin https://typhon.test:PORT) streams the relay's session.
    let state = browser
        .wait_for(HOOK, WAIT, |s| {
            let lanes = names(&s["page"]["summary"]["lanes"], "name");
            lanes.contains(&"alpha/Sim".to_owned())
                && s["page"]["summary"]["events"].as_u64() > Some(0)
        })
        .unwrap_or_else(|e| panic!("the page did not stream over HTTPS: {e}"));
    assert_eq!(state["page"]["summary"]["connection"]["state"], "connected");
    let location = browser.run("return window.location.href;").unwrap();
    assert_eq!(location.as_str(), Some(url.as_str()));
    let _ = std::fs::remove_dir_all(&dir);
}
