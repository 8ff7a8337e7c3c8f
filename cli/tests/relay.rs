//! The relay against a real Prometheus (Debian's `prometheus`): two demo
//! processes through the relay, Prometheus scraping its /metrics, and its
//! HTTP API asked until both sources' histograms and gauges are there.
//! Skipped, saying so, where Prometheus is not installed; `.ci/run`
//! installs it and fails if this skips. Everything on 127.0.0.1; waits
//! are bounded.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{free_port, get, relay_ends, spawn_demo, temp, typhon, wait_for, Killed};

/// `program` (Debian's `prometheus` package has `prometheus` and
/// `promtool`), found on the PATH.
fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| PathBuf::from(dir).join(program))
        .find(|p| p.is_file())
}

fn prometheus() -> Option<PathBuf> {
    on_path("prometheus")
}

/// `promtool check metrics` of `text`: its exit status and what it said.
fn promtool_check(promtool: &Path, text: &str) -> (bool, String) {
    use std::io::Write;
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), said)
}

/// Prometheus run with `config`, its data in `dir`: the process, and the
/// port of its HTTP API.
fn start_prometheus(prometheus: &Path, config: &Path, dir: &Path) -> (Killed, u16) {
    let port = free_port();
    let process = Command::new(prometheus)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus starts");
    (Killed(process), port)
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
    if !cfg!(target_os = "linux") {
        // Under wine (CI's Windows run) as on Windows: Debian's
        // Prometheus is a Linux program.
        common::skipped("the Prometheus test runs on Linux only");
        return;
    }
    let Some(prometheus) = prometheus() else {
        common::skipped("prometheus not installed (Debian: apt-get install prometheus)");
        return;
    };
    let (demo_a, addr_a) = spawn_demo("90", "2");
    let (demo_b, addr_b) = spawn_demo("90", "1");
    let _demos = (Killed(demo_a), Killed(demo_b));
    let (_relay, metrics_addr) = common::spawn_relay(
        &[
            "--metrics",
            "127.0.0.1:0",
            "--duration",
            "90",
            "--source",
            &format!("alpha={addr_a}"),
            "--source",
            &format!("beta={addr_b}"),
        ],
        "typhon-live relay: metrics on http://",
    );

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
    let (_prometheus, port) = start_prometheus(&prometheus, &config, &dir);

    let both = vec!["alpha".to_owned(), "beta".to_owned()];
    let deadline = Instant::now() + Duration::from_secs(60);
    let ready = loop {
        let spans = query(port, "typhon_span_duration_seconds_count");
        let ticks = query(port, "typhon_tick_duration_seconds_count");
        let memory = query(port, "typhon_reading{gauge=\"memory.bytes\"}");
        let up = query(port, "typhon_source_up");
        // The CPU its threads used, from their samples (Linux only yet).
        let cpu = query(port, "typhon_source_cpu");
        let cpu_known = !cfg!(target_os = "linux") || sources_above_zero(&cpu) == both;
        // What each demo process holds, as its tracking allocator counts.
        let live = query(port, "typhon_source_memory_live_bytes");
        if sources_above_zero(&spans) == both
            && sources_above_zero(&live) == both
            && sources_above_zero(&ticks) == both
            && sources_above_zero(&memory) == both
            && sources_above_zero(&up) == both
            && cpu_known
        {
            for (labels, cores) in &cpu {
                // The demo's threads run part of each tick on two cores.
                assert!(*cores > 0.0 && *cores <= 2.5, "{labels} {cores} cores");
            }
            for (labels, bytes) in &live {
                // Its history, its rings, its names: megabytes, not more
                // than a gigabyte.
                assert!(*bytes > 1e5 && *bytes < 1e9, "{labels} {bytes} bytes live");
            }
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

    // Prometheus asked for OpenMetrics and read it; a client that names
    // no format gets the text format 0.0.4, and promtool's lint (which
    // reads that) finds nothing in it, with every series there.
    let promtool = on_path("promtool").expect("promtool comes with prometheus");
    let metrics_port: u16 = metrics_addr.rsplit(':').next().unwrap().parse().unwrap();
    let text = get(metrics_port, "/metrics").expect("/metrics answers");
    assert!(text.contains("typhon_reading{"), "{text}");
    let (clean, said) = promtool_check(&promtool, &text);
    assert!(clean, "promtool check metrics: {said}\n{text}");
    // The lint does find what it looks for: a gauge named by its type.
    let (clean, said) = promtool_check(
        &promtool,
        "# HELP typhon_gauge A reading.\n# TYPE typhon_gauge gauge\ntyphon_gauge 1\n",
    );
    assert!(!clean && said.contains("type"), "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn prometheus_scrapes_the_relay_over_tls_with_the_bearer_token_and_only_so() {
    if !cfg!(target_os = "linux") {
        common::skipped("the Prometheus test runs on Linux only");
        return;
    }
    let Some(prometheus) = prometheus() else {
        common::skipped("prometheus not installed (Debian: apt-get install prometheus)");
        return;
    };
    let dir = temp("prometheus-tls");
    std::fs::create_dir_all(&dir).unwrap();
    let authority = typhon_live_tests::tls::Authority::new();
    let ca = authority.write_ca(&dir);
    let (cert, key) = authority.write_server(&dir);
    let token = dir.join("token");
    std::fs::write(&token, "scrapers-token").unwrap();
    let (demo, addr) = spawn_demo("90", "1");
    let _demo = Killed(demo);
    let (_relay, said) = common::spawn_relay(
        &[
            "--metrics",
            "127.0.0.1:0",
            "--duration",
            "90",
            "--source",
            &format!("alpha={addr}"),
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
            "--token-file",
            token.to_str().unwrap(),
        ],
        "typhon-live relay: metrics on https://",
    );
    let target = said.split('/').next().unwrap().to_owned();
    // Three jobs: as it should be; without the token; without the CA.
    let job = |name: &str, tls: &str, authorization: &str| {
        format!(
            "  - job_name: {name}\n    scheme: https\n{tls}{authorization}    static_configs:\n      - targets: ['{target}']\n"
        )
    };
    let trusted = format!("    tls_config:\n      ca_file: {}\n", ca.display());
    let bearer = format!(
        "    authorization:\n      credentials_file: {}\n",
        token.display()
    );
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n{}{}{}",
            job("with-token", &trusted, &bearer),
            job("without-token", &trusted, ""),
            job("without-ca", "", &bearer),
        ),
    )
    .unwrap();
    let (_prometheus, port) = start_prometheus(&prometheus, &config, &dir);
    let up = |job: &str| {
        query(port, &format!("up{{job=\"{job}\"}}"))
            .first()
            .map(|(_, v)| *v)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let scraped = query(port, "typhon_source_up{job=\"with-token\"}");
        let (with, without, untrusted) = (up("with-token"), up("without-token"), up("without-ca"));
        if sources_above_zero(&scraped) == ["alpha"]
            && with == Some(1.0)
            && without == Some(0.0)
            && untrusted == Some(0.0)
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "within 60 s: up {with:?} with the token, {without:?} without, {untrusted:?} \
             without the CA; {scraped:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_source_down_at_first_then_up_gone_and_restarted_is_followed() {
    let port = free_port();
    let source = format!("127.0.0.1:{port}");
    let (_relay, metrics_addr) = common::spawn_relay(
        &[
            "--metrics",
            "127.0.0.1:0",
            "--duration",
            "120",
            "--source",
            &format!("svc={source}"),
        ],
        "typhon-live relay: metrics on http://",
    );
    let metrics: u16 = metrics_addr
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("relay serves metrics on {metrics_addr:?}"));
    // Nothing there yet: known, and down.
    wait_for(metrics, "typhon_source_up{source=\"svc\"}", |v| v == 0.0);

    let demo = |seconds: &str| {
        Killed(
            typhon()
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
    // The sources and the port from a configuration file.
    let config = temp("relay.json");
    std::fs::write(
        &config,
        format!(r#"{{"sources": {{"alpha": "{addr_a}", "beta": "{addr_b}"}}, "listen": 0}}"#),
    )
    .unwrap();
    let (_relay, viewers) = common::spawn_relay(
        &["--config", config.to_str().unwrap(), "--duration", "60"],
        "typhon-live relay: viewers on ",
    );
    // Two viewers at once, each its own stream.
    let attach = || {
        typhon()
            .args(["attach", &viewers, "--json", "--duration", "5"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (first, second) = (attach(), attach());
    for viewer in [first, second] {
        let summary = common::last_summary(viewer);
        let last = summary.to_string();
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
    let _ = std::fs::remove_file(&config);
}

#[test]
fn bad_addresses_are_usage_errors_naming_where_they_were_given() {
    let (code, stderr) = relay_ends(&["--source", "a=127.0.0.1:1", "--metrics", "9464"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--metrics"), "{stderr}");
    let (code, stderr) = relay_ends(&["--source", "a=9100"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--source"), "{stderr}");

    let config = temp("bad-metrics.json");
    std::fs::write(
        &config,
        r#"{"sources": {"a": "127.0.0.1:1"}, "metrics": "9464"}"#,
    )
    .unwrap();
    let (code, stderr) = relay_ends(&["--config", config.to_str().unwrap()]);
    let _ = std::fs::remove_file(&config);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("metrics: \"9464\""), "{stderr}");
}

#[test]
fn metrics_beyond_loopback_are_served_with_a_warning() {
    // TEST-NET-1 (RFC 5737) is no address of this machine: the warning
    // comes, then the bind fails; nothing listens beyond loopback.
    let (code, stderr) = relay_ends(&[
        "--source",
        "a=127.0.0.1:1",
        "--metrics",
        "192.0.2.1:9464",
        "--duration",
        "5",
    ]);
    assert!(stderr.contains("beyond loopback"), "{stderr}");
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains("cannot listen on 192.0.2.1:9464"),
        "{stderr}"
    );
}
