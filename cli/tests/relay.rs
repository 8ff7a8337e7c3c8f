//! The relay against a real Prometheus (Debian's `prometheus`): two demo
//! processes through the relay, Prometheus scraping its /metrics, and its
//! HTTP API asked until both sources' histograms and gauges are there.
//! Skipped, saying so, where Prometheus is not installed; `.ci/run`
//! installs it and fails if this skips. Everything on 127.0.0.1; waits
//! are bounded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{spawn_demo, temp, BIN};

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn prometheus() -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| PathBuf::from(dir).join("prometheus"))
        .find(|p| p.is_file())
}

/// A port free a moment ago (Prometheus cannot be told port 0 and say
/// which it took).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The body of `GET path` on `127.0.0.1:port`, if it answered 200.
fn get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_owned())
}

/// Prometheus's answer to an instant query: (labels, value) per series.
fn query(port: u16, promql: &str) -> Vec<(serde_json::Value, f64)> {
    let encoded: String = promql
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let Some(body) = get(port, &format!("/api/v1/query?query={encoded}")) else {
        return Vec::new();
    };
    // The body may be chunked: the JSON object is between the outer braces.
    let (Some(start), Some(end)) = (body.find('{'), body.rfind('}')) else {
        return Vec::new();
    };
    let json: serde_json::Value = serde_json::from_str(&body[start..=end]).unwrap_or_default();
    json["data"]["result"]
        .as_array()
        .map(|series| {
            series
                .iter()
                .map(|s| {
                    let value = s["value"][1]
                        .as_str()
                        .unwrap_or("nan")
                        .parse()
                        .unwrap_or(f64::NAN);
                    (s["metric"].clone(), value)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The sources (by `source` label) of series with a value above 0.
fn sources_above_zero(series: &[(serde_json::Value, f64)]) -> Vec<String> {
    let mut sources: Vec<String> = series
        .iter()
        .filter(|(_, v)| *v > 0.0)
        .filter_map(|(labels, _)| labels["source"].as_str().map(str::to_owned))
        .collect();
    sources.sort();
    sources.dedup();
    sources
}

#[test]
fn prometheus_scrapes_two_sources_through_the_relay() {
    let Some(prometheus) = prometheus() else {
        eprintln!("skipped: prometheus not installed (Debian: apt-get install prometheus)");
        return;
    };
    let (demo_a, addr_a) = spawn_demo("90", "2");
    let (demo_b, addr_b) = spawn_demo("90", "1");
    let _demos = (Killed(demo_a), Killed(demo_b));
    let mut relay = Command::new(BIN)
        .args(["relay", "--metrics", "127.0.0.1:0", "--duration", "90"])
        .args(["--source", &format!("alpha={addr_a}")])
        .args(["--source", &format!("beta={addr_b}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(relay.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _relay = Killed(relay);
    let metrics_addr = line
        .trim()
        .strip_prefix("typhon-live relay: metrics on http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("relay printed {line:?}"))
        .to_owned();

    let dir = temp("prometheus");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: typhon-relay\n    static_configs:\n      - targets: ['{metrics_addr}']\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let _prometheus = Killed(
        Command::new(prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts"),
    );

    let both = vec!["alpha".to_owned(), "beta".to_owned()];
    let deadline = Instant::now() + Duration::from_secs(60);
    let ready = loop {
        let spans = query(port, "typhon_span_duration_seconds_count");
        let ticks = query(port, "typhon_tick_duration_seconds_count");
        let memory = query(port, "typhon_gauge{gauge=\"memory.bytes\"}");
        let up = query(port, "typhon_source_up");
        if sources_above_zero(&spans) == both
            && sources_above_zero(&ticks) == both
            && sources_above_zero(&memory) == both
            && sources_above_zero(&up) == both
        {
            break Some((spans, ticks, memory));
        }
        if Instant::now() >= deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    let (spans, ticks, memory) = ready.expect("both sources in Prometheus within 60 s");

    // Plausible values: the demo's Sim spans every tick at 60 Hz, ticks
    // of a few ms, memory in the hundreds of MB.
    let tick_spans = spans.iter().filter(|(l, _)| l["span"] == "Tick").count();
    assert_eq!(tick_spans, 2, "{spans:?}");
    for (labels, count) in &ticks {
        assert!(*count >= 10.0, "{labels} {count}");
    }
    let mean_tick = query(
        port,
        "typhon_tick_duration_seconds_sum / typhon_tick_duration_seconds_count",
    );
    for (labels, mean) in &mean_tick {
        assert!(*mean > 0.0 && *mean < 0.1, "{labels} mean tick {mean} s");
    }
    for (labels, bytes) in &memory {
        assert!(*bytes > 1e6 && *bytes < 1e10, "{labels} {bytes}");
    }
    let buckets = query(
        port,
        "typhon_span_duration_seconds_bucket{source=\"alpha\",span=\"Tick\",le=\"+Inf\"}",
    );
    assert_eq!(buckets.len(), 1, "{buckets:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The value of the series starting with `series` in the relay's own
/// /metrics, if it is there.
fn relay_value(port: u16, series: &str) -> Option<f64> {
    let text = get(port, "/metrics")?;
    let line = text.lines().find(|l| l.starts_with(series))?;
    line.rsplit(' ').next()?.parse().ok()
}

/// Waits (at most 30 s) until `series` on the relay satisfies `want`.
fn wait_for(port: u16, series: &str, want: impl Fn(f64) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let value = relay_value(port, series);
        if value.is_some_and(&want) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{series} is {value:?} after 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_source_down_at_first_then_up_gone_and_restarted_is_followed() {
    let port = free_port();
    let source = format!("127.0.0.1:{port}");
    let mut relay = Command::new(BIN)
        .args(["relay", "--metrics", "127.0.0.1:0", "--duration", "120"])
        .args(["--source", &format!("svc={source}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(relay.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _relay = Killed(relay);
    let metrics: u16 = line
        .trim()
        .trim_end_matches("/metrics")
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("relay printed {line:?}"));
    // Nothing there yet: known, and down.
    wait_for(metrics, "typhon_source_up{source=\"svc\"}", |v| v == 0.0);

    let demo = |seconds: &str| {
        Killed(
            Command::new(BIN)
                .args([
                    "demo",
                    "--no-view",
                    "--threads",
                    "1",
                    "--live",
                    &port.to_string(),
                ])
                .args(["--duration", seconds])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let first = demo("3");
    wait_for(metrics, "typhon_source_up{source=\"svc\"}", |v| v == 1.0);
    wait_for(
        metrics,
        "typhon_tick_duration_seconds_count{source=\"svc\"}",
        |v| v > 10.0,
    );
    // It ends; the relay notices and keeps trying.
    drop(first);
    wait_for(metrics, "typhon_source_up{source=\"svc\"}", |v| v == 0.0);
    let _second = demo("60");
    wait_for(
        metrics,
        "typhon_source_restarts_total{source=\"svc\"}",
        |v| v == 1.0,
    );
    wait_for(metrics, "typhon_source_up{source=\"svc\"}", |v| v == 1.0);
    wait_for(
        metrics,
        "typhon_source_reconnects_total{source=\"svc\"}",
        |v| v >= 1.0,
    );
}

#[test]
fn viewers_of_the_relay_each_see_every_sources_lanes_on_one_timeline() {
    let (demo_a, addr_a) = spawn_demo("60", "2");
    let (demo_b, addr_b) = spawn_demo("60", "1");
    let _demos = (Killed(demo_a), Killed(demo_b));
    let mut relay = Command::new(BIN)
        .args(["relay", "--listen", "0", "--duration", "60"])
        .args(["--source", &format!("alpha={addr_a}")])
        .args(["--source", &format!("beta={addr_b}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(relay.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _relay = Killed(relay);
    let viewers = line
        .trim()
        .strip_prefix("typhon-live relay: viewers on ")
        .unwrap_or_else(|| panic!("relay printed {line:?}"))
        .to_owned();
    // Two viewers at once, each its own stream.
    let attach = || {
        Command::new(BIN)
            .args(["attach", &viewers, "--json", "--duration", "5"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (first, second) = (attach(), attach());
    for viewer in [first, second] {
        let out = viewer.wait_with_output().unwrap();
        let last = String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .map(str::to_owned)
            .expect("a summary line");
        let summary: serde_json::Value = serde_json::from_str(&last).unwrap();
        let mut lanes: Vec<&str> = summary["lanes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|l| l["name"].as_str())
            .collect();
        lanes.sort_unstable();
        // alpha: the Sim thread and 2 workers; beta: the Sim thread and 1.
        assert_eq!(lanes.len(), 5, "{lanes:?}");
        assert_eq!(lanes.iter().filter(|l| l.starts_with("alpha/")).count(), 3);
        assert_eq!(lanes.iter().filter(|l| l.starts_with("beta/")).count(), 2);
        assert_eq!(summary["process"], "typhon-live relay");
        // A gauge is a process's: one per source.
        let gauges: Vec<&str> = summary["gauges"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|g| g["name"].as_str())
            .collect();
        for gauge in ["alpha/memory.bytes", "beta/memory.bytes"] {
            assert!(gauges.contains(&gauge), "{gauges:?}");
        }
        assert_eq!(summary["frames_dropped"], 0, "{last}");
        // Both sources tick at 60 Hz, on one timeline: 120 ticks a second.
        let rate = summary["tick_rate_hz"].as_f64().unwrap();
        assert!((100.0..140.0).contains(&rate), "{rate}");
    }
}
