//! What the end-to-end test files share: the binary, scratch paths, and
//! the demo launcher.
#![allow(dead_code)] // each test file uses its own part

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_typhon-live");

/// The binary, as a command that does not see the developer's settings.
pub fn typhon() -> Command {
    let mut command = Command::new(BIN);
    without_settings(&mut command);
    command
}

/// Removes every `TYPHON_LIVE_*` and `OTEL_*` variable of the tests'
/// environment from `command`'s: a shell exporting to a collector, or
/// holding a token, must not change what a test runs (a test sets what
/// it means to).
pub fn without_settings(command: &mut Command) -> &mut Command {
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if text.starts_with("TYPHON_LIVE_") || text.starts_with("OTEL_") {
            command.env_remove(&name);
        }
    }
    command
}

/// Says that a test skipped a real component, and why. Written to the
/// process's stderr itself, past the test harness's capture (which keeps
/// a passing test's output to itself), so that `.ci/run` sees the line and
/// fails: CI must really run what the test needs. The line goes out in
/// one write: `writeln!` writes it in pieces, and the harness's lines of
/// other tests, running at once, came between them.
pub fn skipped(why: &str) {
    let line = format!("skipped: {why}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

pub fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("typhon-live-e2e-{}-{name}", std::process::id()))
}

/// Starts `demo --no-view --live 0` and returns it with the address it
/// printed.
pub fn spawn_demo(duration: &str, threads: &str) -> (std::process::Child, String) {
    spawn_demo_with(&["--duration", duration, "--threads", threads])
}

/// Starts `demo --no-view --live 0` with more arguments.
pub fn spawn_demo_with(args: &[&str]) -> (std::process::Child, String) {
    let mut demo = typhon()
        .args(["demo", "--no-view", "--live", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("demo starts");
    let mut line = String::new();
    BufReader::new(demo.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line.trim().rsplit(' ').next().unwrap().to_owned();
    assert!(addr.starts_with("127.0.0.1:"), "demo printed {line:?}");
    (demo, addr)
}

/// Records `addr` into `path` until the file holds `min_len` bytes (or 20
/// s pass), then kills the recorder: as hard an interruption as there is.
pub fn record_then_kill(addr: &str, path: &std::path::Path, min_len: u64) {
    let mut record = typhon()
        .args(["record", addr, "-o"])
        .arg(path)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::metadata(path).map_or(0, |m| m.len()) < min_len && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    record.kill().unwrap();
    record.wait().unwrap();
}

/// A child process killed when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port free a moment ago (Prometheus cannot be told port 0 and say
/// which it took).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The body of `GET path` on `127.0.0.1:port`, if it answered 200.
pub fn get(port: u16, path: &str) -> Option<String> {
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

/// The value of the series starting with `series` in the relay's own
/// /metrics, if it is there.
pub fn relay_value(port: u16, series: &str) -> Option<f64> {
    let text = get(port, "/metrics")?;
    let line = text.lines().find(|l| l.starts_with(series))?;
    line.rsplit(' ').next()?.parse().ok()
}

/// Waits (at most 30 s) until `series` on the relay satisfies `want`.
pub fn wait_for(port: u16, series: &str, want: impl Fn(f64) -> bool) {
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

/// Starts `relay ARGS` and returns it with the address the line starting
/// with `prefix` gave (its first stdout lines tell where it serves).
pub fn spawn_relay(args: &[&str], prefix: &str) -> (Killed, String) {
    let mut command = typhon();
    command.arg("relay").args(args);
    spawn_relay_with(command, prefix)
}

/// [`spawn_relay`] of a command made by the caller (under limits, say).
pub fn spawn_relay_with(command: Command, prefix: &str) -> (Killed, String) {
    let (relay, told) = spawn_telling(command, &[prefix]);
    (relay, told[0].trim_end_matches("/metrics").to_owned())
}

/// Starts `command` and reads its stdout until a line has started with
/// each of `prefixes` (its first lines tell where it serves): the
/// process, and the rest of each such line, in the order of `prefixes`.
/// The rest of stdout is drained, so that it never blocks on a full pipe.
pub fn spawn_telling(mut command: Command, prefixes: &[&str]) -> (Killed, Vec<String>) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let child = Killed(child);
    let mut told: Vec<Option<String>> = vec![None; prefixes.len()];
    while told.iter().any(Option::is_none) {
        let line = lines.next().expect("it tells where it serves").unwrap();
        for (prefix, rest) in prefixes.iter().zip(&mut told) {
            if let Some(after) = line.trim().strip_prefix(prefix) {
                *rest = Some(after.to_owned());
            }
        }
    }
    std::thread::spawn(move || lines.for_each(drop));
    (child, told.into_iter().flatten().collect())
}

/// Starts `typhon-live ARGS` and returns it with the viewer's URL it
/// printed.
pub fn serve_web(args: &[&str]) -> (Killed, String) {
    let mut child = typhon()
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

/// The last `--json` summary of `attach` started by `command` (which
/// must end by itself).
pub fn last_summary(command: std::process::Child) -> serde_json::Value {
    let out = command.wait_with_output().unwrap();
    let last = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .map(str::to_owned)
        .expect("a summary line");
    serde_json::from_str(&last).unwrap_or_else(|e| panic!("{e}: {last}"))
}

/// Peak resident memory of process `pid` so far (Linux's VmHWM).
pub fn peak_rss(pid: u32) -> Option<u64> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches(" kB")
        .parse::<u64>()
        .ok()?;
    Some(kib << 10)
}

/// `relay ARGS` run to its end: exit code and stderr.
pub fn relay_ends(args: &[&str]) -> (Option<i32>, String) {
    let out = typhon()
        .arg("relay")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Where the page's hook says it lists the name `name` (the middle of
/// its row), to click.
pub fn listed_at(state: &serde_json::Value, name: &str) -> (f64, f64) {
    let listed = (state["page"]["listed"].as_array().cloned()).unwrap_or_default();
    let row = (listed.iter())
        .find(|row| row[0] == name)
        .unwrap_or_else(|| panic!("{name} is not listed: {listed:?}"));
    middle(&row[1])
}

/// The middle of a rectangle `[x, y, w, h]` a browser page's hook
/// reported.
pub fn middle(rect: &serde_json::Value) -> (f64, f64) {
    let at = |i: usize| rect[i].as_f64().unwrap_or(0.0);
    (at(0) + at(2) / 2.0, at(1) + at(3) / 2.0)
}

/// The screen a terminal of `rows` × `cols` shows after `output`: cursor
/// positioning (`ESC[r;cH`) and text; other escape sequences (colours,
/// modes) change nothing here.
pub fn screen(output: &[u8], rows: usize, cols: usize) -> Vec<String> {
    let text = String::from_utf8_lossy(output);
    let mut grid = vec![vec![' '; cols]; rows];
    let (mut r, mut c) = (0usize, 0usize);
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch == '\u{1b}' {
            if chars.peek() != Some(&'[') {
                continue;
            }
            chars.next();
            let mut params = String::new();
            let mut end = ' ';
            for p in chars.by_ref() {
                if p.is_ascii_alphabetic() || p == '@' || p == '~' {
                    end = p;
                    break;
                }
                params.push(p);
            }
            if end == 'H' {
                let mut it = params.split(';').map(|n| n.parse::<usize>().unwrap_or(1));
                r = it.next().unwrap_or(1).saturating_sub(1);
                c = it.next().unwrap_or(1).saturating_sub(1);
            }
            continue;
        }
        if ch == '\r' || ch == '\n' {
            continue;
        }
        if r < rows && c < cols {
            grid[r][c] = ch;
        }
        c += 1;
    }
    grid.into_iter()
        .map(|row| row.into_iter().collect())
        .collect()
}

/// `typhon-live ARGS` (one shell word each, as `script` takes them) in a
/// pseudo-terminal of `rows` × `cols` (`script`, from util-linux), with
/// `keys` typed into it, each after its pause in ms. It must end within
/// 20 s (a key among them quits it); what it wrote, and its status.
pub fn in_pty(args: &str, rows: usize, cols: usize, keys: &[(u64, &[u8])]) -> std::process::Output {
    let command = format!("stty rows {rows} cols {cols}; exec {BIN} {args}");
    let mut child = without_settings(&mut Command::new("script"))
        .args(["-qfec", &command, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("script starts");
    let mut stdin = child.stdin.take().unwrap();
    let keys: Vec<(u64, Vec<u8>)> = keys.iter().map(|(ms, k)| (*ms, k.to_vec())).collect();
    let typist = std::thread::spawn(move || {
        for (ms, key) in keys {
            std::thread::sleep(Duration::from_millis(ms));
            let _ = stdin.write_all(&key);
            let _ = stdin.flush();
        }
        // Held open until it ends: an early EOF would end `script`.
        std::thread::sleep(Duration::from_secs(3));
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "{args} did not end on its keys");
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    typist.join().unwrap();
    output
}
