//! An async service watched live in a real browser: the tests' axum
//! service (`typhon_live_tests::service`) runs in this test under load,
//! recorded through the `tracing` layer with the profiler live; the
//! relay serves it to headless Chromium, whose page must draw its
//! requests as task spans on the task tracks, with their polls, named by
//! route. Skipped, with the reason, where Chromium is not installed;
//! `.ci/run` installs it and fails on the skip.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{skipped, typhon};
use serde_json::Value;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::Profiler;
use typhon_live_tests::browser::Browser;
use typhon_live_tests::service::{load, serve};

const HOOK: &str = "return window.typhon ? window.typhon.summary() : null;";

fn span_names(state: &Value) -> Vec<String> {
    (state["page"]["summary"]["span_stats"]
        .as_array()
        .into_iter())
    .flatten()
    .filter_map(|s| s["name"].as_str().map(str::to_owned))
    .collect()
}

#[test]
fn an_async_service_shows_its_task_tracks_live_in_chromium() {
    if !cfg!(target_os = "linux") {
        // Under wine, /usr/bin/chromium is found and cannot run.
        return skipped("the browser test runs Chromium on Linux only");
    }
    let browser = match Browser::start(1400, 800) {
        Ok(browser) => browser,
        Err(why) => return skipped(&why),
    };
    let config = ProfilerConfig {
        live: Some(0),
        ..ProfilerConfig::default()
    };
    let profiler = Profiler::start(&config, &Default::default()).expect("profiler");
    let live = profiler.live_addr().expect("a live port");
    tracing_subscriber::registry()
        .with(typhon_live_tracing::TyphonLayer::new())
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let service = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let server = runtime.spawn(serve(listener, stopped));
    // Load until the page has been checked: two clients, in rounds.
    let loading = Arc::new(AtomicBool::new(true));
    let load_loop = runtime.spawn({
        let loading = loading.clone();
        async move {
            while loading.load(Ordering::Relaxed) {
                load(service, 2, 20).await;
            }
        }
    });

    let mut relay = typhon();
    relay
        .args(["relay", "--web", "0", "--duration", "90"])
        .args(["--source", &format!("svc={live}")]);
    let (_relay, told) = common::spawn_telling(relay, &["typhon-live relay: browser viewer at "]);
    browser.open(told[0].trim()).unwrap();
    let state = browser
        .wait_for(HOOK, Duration::from_secs(60), |s| {
            let names = span_names(s);
            s["page"]["task_bars"].as_u64() > Some(0)
                && s["page"]["task_polls"].as_u64() > Some(0)
                && ["GET /a", "GET /b"]
                    .iter()
                    .all(|route| names.iter().any(|n| n.ends_with(route)))
        })
        .unwrap_or_else(|e| panic!("the page drew no task tracks of the routes: {e}"));
    let screenshot = std::env::temp_dir().join("typhon-live-task-tracks.png");
    if let Ok(png) = browser.screenshot() {
        let _ = std::fs::write(&screenshot, png);
        eprintln!("screenshot: {}", screenshot.display());
    }
    let page = &state["page"];
    assert!(page["task_rows"].as_u64() >= Some(1), "{page}");
    // A request is counted once, by its wall time: not per poll, so the
    // routes' counts stay near the requests (two clients, one at a time).
    let stats = page["summary"]["span_stats"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let route = stats
        .iter()
        .find(|s| s["name"].as_str().is_some_and(|n| n.ends_with("GET /a")))
        .expect("GET /a");
    assert!(
        route["idle_ms"].as_f64() > Some(0.0),
        "a request waits: {route}"
    );

    loading.store(false, Ordering::Relaxed);
    runtime.block_on(async {
        let _ = tokio::time::timeout(Duration::from_secs(30), load_loop).await;
        let _ = stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(30), server).await;
    });
    runtime.shutdown_timeout(Duration::from_secs(10));
    profiler.stop().expect("stop");
}
