//! The browser viewer, end to end, in a real browser: `demo --web`
//! served to headless Chromium (WebDriver), the page's state read through
//! its test hook (`window.typhon.summary()`), the person's gestures sent
//! as WebDriver actions. Skipped, with the reason, where Chromium is not
//! installed; `.ci/run` installs it and fails on the skip.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{skipped, Killed, BIN};
use serde_json::Value;
use typhon_live_tests::browser::{colours, Browser};

const HOOK: &str = "return window.typhon ? window.typhon.summary() : null;";
const WAIT: Duration = Duration::from_secs(40);

/// Starts `typhon-live ARGS` and returns it with the viewer's URL it
/// printed.
fn serve(args: &[&str]) -> (Killed, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let child = Killed(child);
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some((_, url)) = line.split_once("browser viewer at ") {
            let url = url.trim().to_owned();
            // The rest of stdout is drained, so that the process never
            // blocks on a full pipe.
            std::thread::spawn(move || lines.for_each(drop));
            return (child, url);
        }
    }
    panic!("no URL printed");
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item[key].as_str().map(str::to_owned))
        .collect()
}

/// The middle of a rectangle `[x, y, w, h]` the hook reported.
fn middle(rect: &Value) -> (f64, f64) {
    let at = |i: usize| rect[i].as_f64().unwrap_or(0.0);
    (at(0) + at(2) / 2.0, at(1) + at(3) / 2.0)
}

#[test]
fn the_demo_is_watched_live_in_chromium() {
    if !cfg!(target_os = "linux") {
        // Under wine, /usr/bin/chromium is found and cannot run.
        return skipped("the browser test runs Chromium on Linux only");
    }
    let browser = match Browser::start(1400, 800) {
        Ok(browser) => browser,
        Err(why) => return skipped(&why),
    };
    let (_demo, url) = serve(&["demo", "--web", "--live", "0", "--duration", "120"]);
    browser.open(&url).unwrap();

    // The page loads, connects, and its model holds the demo's lanes and
    // span names.
    let state = browser
        .wait_for(HOOK, WAIT, |s| {
            let lanes = names(&s["page"]["summary"]["lanes"], "name");
            lanes.contains(&"Sim".to_owned())
                && lanes.iter().any(|l| l.starts_with("worker-"))
                && s["page"]["bars"].as_u64() > Some(0)
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
    let stalled = browser
        .wait_for(HOOK, WAIT, |s| {
            open(s) > 200.0 && s["page"]["open_bars"].as_u64() > Some(0)
        })
        .unwrap_or_else(|e| panic!("no stall seen open: {e}"));
    let grown = browser
        .wait_for(HOOK, Duration::from_secs(5), |s| {
            open(s) > open(&stalled) + 100.0
        })
        .unwrap_or_else(|e| panic!("the open span did not grow: {e}"));
    assert!(open(&grown) > open(&stalled));
    let stall_png = browser.screenshot().unwrap();
    browser
        .wait_for(HOOK, WAIT, |s| {
            s["page"]["summary"]["overruns"].as_u64() > Some(0)
        })
        .unwrap_or_else(|e| panic!("the stalled tick was not counted as an overrun: {e}"));

    // Pause, by clicking its button: the picture stays while frames
    // keep arriving.
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
    assert!(
        later["page"]["frames"].as_u64() > paused["page"]["frames"].as_u64(),
        "no frames arrived while paused"
    );

    // The wheel over the timeline zooms out around the cursor, far
    // enough to show the overrunning tick on the ruler; then in.
    let (x, y) = middle(&later["page"]["timeline"]);
    let window = |s: &Value| {
        let w = &s["page"]["window"];
        w["end"].as_u64().unwrap_or(0) - w["start"].as_u64().unwrap_or(0)
    };
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

    // The picture is a picture: many colours, and kept for a person to
    // look at.
    for (png, name) in [
        (stall_png, "stall"),
        (browser.screenshot().unwrap(), "zoomed"),
    ] {
        let path = std::env::temp_dir().join(format!("typhon-live-web-{name}.png"));
        std::fs::write(&path, &png).unwrap();
        let seen = colours(&png, 64).unwrap();
        assert!(seen >= 16, "{seen} colours in {}", path.display());
    }
}
