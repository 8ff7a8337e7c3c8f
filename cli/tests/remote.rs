//! The relay's viewers' port over TLS with a token (typhon_live_remote),
//! against the command's own viewers (`attach`, `record`) and raw
//! sockets: the right token streams, with the certificate pinned or
//! checked against a CA made in the test (rcgen); the wrong token, the
//! wrong fingerprint, no TLS and a handshake that stalls are refused, and
//! counted; 200 half-open handshakes, more than the gate holds, leave a
//! good viewer unaffected. Everything on 127.0.0.1; waits are bounded.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use typhon_live_remote::fingerprint::Fingerprint;
use typhon_live_remote::handshake;
use typhon_live_remote::rustls;
use typhon_live_remote::token::Token;
use typhon_live_remote::trust::Trust;
use typhon_live_tests::tls::Authority;

mod common;

use common::{spawn_demo, spawn_telling, temp, typhon, Killed};

const TOKEN: &str = "s3cret-viewers-token";

/// A relay of `source` serving viewers over TLS with [`TOKEN`], with
/// `args`: the relay, its viewers' address, the certificate's
/// fingerprint as it printed it, and its metrics' port.
fn relay_over_tls(source: &str, token_file: &Path, args: &[&str]) -> (Killed, String, String, u16) {
    let mut command = typhon();
    command
        .args(["relay", "--source", &format!("d={source}"), "--listen", "0"])
        .args(["--metrics", "127.0.0.1:0", "--tls", "--token-file"])
        .arg(token_file)
        .args(["--duration", "60"])
        .args(args);
    let (relay, told) = spawn_telling(
        command,
        &[
            "typhon-live relay: metrics on https://127.0.0.1:",
            "typhon-live relay: viewers on ",
        ],
    );
    let metrics = told[0].split('/').next().unwrap().parse::<u16>().unwrap();
    let (addr, rest) = told[1].split_once(' ').unwrap();
    assert!(rest.starts_with("over TLS with a token"), "{rest}");
    let fingerprint = rest.rsplit(' ').next().unwrap().to_owned();
    (relay, addr.to_owned(), fingerprint, metrics)
}

/// `attach ADDR --json` for 3 s, the certificate pinned by `fingerprint`,
/// the token in `token_file`: exit code, stdout, stderr.
fn attach(addr: &str, fingerprint: &str, token_file: &str) -> (Option<i32>, String, String) {
    run(&[
        "attach",
        addr,
        "--fingerprint",
        fingerprint,
        "--token-file",
        token_file,
        "--json",
        "--duration",
        "3",
    ])
}

/// The relay's count of connections refused for `reason`, read from its
/// `/metrics` over HTTPS with the token as a bearer token. The
/// certificate is not checked here: `relay.rs` checks it with
/// Prometheus.
fn refused(port: u16, reason: &str) -> f64 {
    let text = unverified()
        .get(&format!("https://127.0.0.1:{port}/metrics"))
        .header("Authorization", &format!("Bearer {TOKEN}"))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    let series = format!("typhon_viewers_refused_total{{reason=\"{reason}\"}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&series))
        .map_or(0.0, |value| value.trim().parse().unwrap())
}

/// An HTTPS client that does not check the certificate.
fn unverified() -> ureq::Agent {
    ureq::Agent::config_builder()
        .tls_config(
            ureq::tls::TlsConfig::builder()
                .disable_verification(true)
                .build(),
        )
        .http_status_as_error(false)
        .build()
        .new_agent()
}

/// `typhon-live ARGS`, run to its end: exit code, stdout, stderr.
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = typhon().args(args).stdin(Stdio::null()).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Events the last summary line of `attach --json` counted.
fn events_seen(stdout: &str) -> u64 {
    let last = stdout.lines().last().expect("a summary line");
    let summary: serde_json::Value = serde_json::from_str(last).unwrap();
    summary["events"].as_u64().unwrap()
}

/// The first half of a TLS ClientHello: a handshake begun and left.
fn half_a_hello() -> Vec<u8> {
    let config = Trust::Pinned(Fingerprint([0; 32])).client().unwrap();
    let mut client =
        rustls::ClientConnection::new(config, "localhost".try_into().unwrap()).unwrap();
    let mut hello = Vec::new();
    client.write_tls(&mut hello).unwrap();
    hello.truncate(hello.len() / 2);
    hello
}

/// Reads `socket` until the server closes it (within `wait`): what it
/// sent, and how long that took.
fn until_closed(socket: &mut TcpStream, wait: Duration) -> (Vec<u8>, Duration) {
    let started = Instant::now();
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match socket.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if typhon_live_tests::timed_out(&e) => {}
            Err(_) => break,
        }
        assert!(
            started.elapsed() < wait,
            "the server kept the connection {wait:?}"
        );
    }
    (got, started.elapsed())
}

#[test]
fn the_right_token_streams_and_a_wrong_one_a_wrong_certificate_no_tls_or_a_stall_are_refused() {
    let dir = temp("remote");
    std::fs::create_dir_all(&dir).unwrap();
    let token_file = dir.join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let wrong_file = dir.join("wrong");
    std::fs::write(&wrong_file, "not-the-token\n").unwrap();
    let (demo, source) = spawn_demo("60", "1");
    let _demo = Killed(demo);
    let (_relay, addr, fingerprint, metrics) = relay_over_tls(&source, &token_file, &[]);
    let (token_file, wrong_file) = (token_file.to_str().unwrap(), wrong_file.to_str().unwrap());
    let counted = |reason: &str| refused(metrics, reason);

    // The certificate pinned, the token right: the stream.
    let (code, stdout, stderr) = attach(&addr, &fingerprint, token_file);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(events_seen(&stdout) > 0, "{stdout}");

    // The wrong token: told, exit 7, nothing streamed.
    let (code, stdout, stderr) = attach(&addr, &fingerprint, wrong_file);
    assert_eq!(code, Some(7), "{stderr}");
    assert!(
        stderr.contains("the server refused the connection: wrong token"),
        "{stderr}"
    );
    assert_eq!(events_seen(&stdout), 0);
    assert!(counted("wrong_token") >= 1.0);

    // Another certificate's fingerprint: the viewer refuses the server,
    // and sends no token.
    let other = Fingerprint::of(b"another certificate").to_string();
    let (code, _, stderr) = attach(&addr, &other, token_file);
    assert_eq!(code, Some(7), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "has the fingerprint {fingerprint}, not the pinned {other}"
        )),
        "{stderr}"
    );

    // No TLS: the token in plain text is not read as one, and no frame
    // comes back.
    let mut plain = TcpStream::connect(&addr).unwrap();
    plain
        .write_all(format!("TOKEN {TOKEN}\n").as_bytes())
        .unwrap();
    let (got, _) = until_closed(&mut plain, Duration::from_secs(8));
    assert!(
        got.len() < 64 && !got.windows(2).any(|w| w == b"TL"),
        "{} bytes came back to plain TCP",
        got.len()
    );

    // A handshake that stalls halfway is closed at its deadline.
    let mut stalled = TcpStream::connect(&addr).unwrap();
    stalled.write_all(&half_a_hello()).unwrap();
    let (_, after) = until_closed(&mut stalled, Duration::from_secs(10));
    assert!(
        after >= handshake::DEADLINE - Duration::from_millis(500),
        "closed after {after:?}, before the deadline"
    );
    assert!(counted("timed_out") >= 1.0 && counted("tls") >= 1.0);

    // /metrics over TLS answers the token's bearer only.
    for (authorization, status) in [
        (None, 401),
        (Some("Bearer not-the-token"), 401),
        (Some(format!("Bearer {TOKEN}").as_str()), 200),
    ] {
        let mut request = unverified().get(&format!("https://127.0.0.1:{metrics}/metrics"));
        if let Some(authorization) = authorization {
            request = request.header("Authorization", authorization);
        }
        assert_eq!(
            request.call().unwrap().status(),
            status,
            "{authorization:?}"
        );
    }

    // No token given: a usage error before any connection.
    let (code, _, stderr) = run(&["attach", &addr, "--fingerprint", &fingerprint]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--token-file FILE, or set TYPHON_LIVE_TOKEN"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The relay's flags for a certificate and key given.
fn given<'a>(cert: &'a Path, key: &'a Path) -> [&'a str; 4] {
    [
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]
}

/// `record ADDR` for 2 s over TLS, trusting `ca`, with the token in
/// `token_file`, into `trace`: exit code, stdout, stderr.
fn record(addr: &str, ca: &Path, token_file: &Path, trace: &Path) -> (Option<i32>, String, String) {
    run(&[
        "record",
        addr,
        "--ca",
        ca.to_str().unwrap(),
        "--token-file",
        token_file.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
        "--duration",
        "2",
    ])
}

#[test]
fn a_certificate_given_is_checked_against_its_ca_by_name_and_record_writes_the_stream() {
    let dir = temp("remote-ca");
    std::fs::create_dir_all(&dir).unwrap();
    let authority = Authority::new();
    let ca = authority.write_ca(&dir);
    let (cert, key) = authority.write_server(&dir);
    let token_file = dir.join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let (demo, source) = spawn_demo("60", "1");
    let _demo = Killed(demo);
    let (_relay, addr, fingerprint, _) = relay_over_tls(&source, &token_file, &given(&cert, &key));
    assert_eq!(
        fingerprint,
        Fingerprint::of(&authority.server_der).to_string()
    );
    let port = addr.rsplit(':').next().unwrap();
    let trace = dir.join("remote.tlt");
    let (code, _, stderr) = record(&format!("localhost:{port}"), &ca, &token_file, &trace);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, inspected, stderr) = run(&["inspect", trace.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(inspected.contains("d/Sim"), "{inspected}");

    // A certificate that is not for the name the viewer asked is
    // refused by the viewer, CA or not.
    let elsewhere = Authority::for_names(&["elsewhere.example"]);
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let (cert, key) = elsewhere.write_server(&other);
    let ca = elsewhere.write_ca(&other);
    let (_relay, addr, _, _) = relay_over_tls(&source, &token_file, &given(&cert, &key));
    let (code, _, stderr) = record(&addr, &ca, &token_file, &trace);
    assert_eq!(code, Some(7), "{stderr}");
    assert!(
        stderr.contains("certificate not valid for name"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A connection to `addr`, tried again for up to 5 s: a listen backlog
/// that is full refuses at once on Windows, where Linux waits.
fn connect_patiently(addr: &str) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match TcpStream::connect(addr) {
            Ok(socket) => return socket,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => panic!("{addr}: {e}"),
        }
    }
}

#[test]
fn two_hundred_half_open_handshakes_leave_a_good_viewer_unaffected() {
    let dir = temp("remote-crowd");
    std::fs::create_dir_all(&dir).unwrap();
    let token_file = dir.join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let (demo, source) = spawn_demo("60", "1");
    let _demo = Killed(demo);
    let (_relay, addr, fingerprint, metrics) = relay_over_tls(&source, &token_file, &[]);
    let trust = Trust::Pinned(fingerprint.parse().unwrap())
        .client()
        .unwrap();
    let token = Token::new(TOKEN).unwrap();
    let open = || {
        let socket = TcpStream::connect(&addr).unwrap();
        let started = Instant::now();
        let deadline = started + handshake::DEADLINE;
        let stream = handshake::open(socket, "127.0.0.1", trust.clone(), &token, deadline)
            .expect("the good viewer's handshake");
        (stream, started.elapsed())
    };
    let (_, alone) = open();

    // More than the gate holds (128), each begun and left halfway; fewer
    // under wine, whose sockets slow with every one open.
    let crowded_by = if cfg!(windows) { 150 } else { 200 };
    let hello = half_a_hello();
    let mut crowd: Vec<TcpStream> = (0..crowded_by)
        .map(|_| {
            let mut socket = connect_patiently(&addr);
            socket.write_all(&hello).unwrap();
            socket
        })
        .collect();
    let (mut stream, crowded) = open();
    // The good viewer gets the merged stream's Init at once.
    stream
        .get_ref()
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut first = [0u8; 2];
    stream.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"TL");
    eprintln!("handshake alone {alone:?}, beside {crowded_by} half-open {crowded:?}");
    assert!(crowded < Duration::from_secs(2), "{crowded:?}");

    // Every one of the crowd is closed: the oldest at once to make room,
    // the rest at their deadline.
    for socket in &mut crowd {
        until_closed(socket, Duration::from_secs(10));
    }
    let counted = |reason: &str| refused(metrics, reason);
    // The gate held 128 at most: the rest closed it to make room.
    let evicted = (crowded_by - 128 - 2) as f64;
    assert!(counted("crowded") >= evicted, "{}", counted("crowded"));
    assert!(counted("crowded") + counted("timed_out") >= crowded_by as f64);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `POST /capture/NAME` to the metrics port asks the relay's recorder of
/// that source for a capture at once: with the token only.
#[test]
fn a_capture_is_asked_over_https_with_the_token_and_refused_without() {
    let (demo, source) = common::spawn_demo("30", "1");
    let _demo = Killed(demo);
    let dir = common::temp("remote-capture");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let token_file = dir.join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let captures = dir.join("captures");
    let (_relay, _addr, _fingerprint, metrics) = relay_over_tls(
        &source,
        &token_file,
        &[
            "--capture",
            captures.to_str().unwrap(),
            "--capture-option",
            "after=500ms",
        ],
    );
    let post = |path: &str, token: Option<&str>| {
        let mut request = unverified().post(&format!("https://127.0.0.1:{metrics}{path}"));
        if let Some(token) = token {
            request = request.header("Authorization", &format!("Bearer {token}"));
        }
        request.send_empty().unwrap().status().as_u16()
    };
    // Let the relay read the source's Init first.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(post("/capture/d", None), 401);
    assert_eq!(post("/capture/d", Some("not-the-token")), 401);
    assert_eq!(post("/capture/nobody", Some(TOKEN)), 404);
    assert_eq!(post("/capture/d", Some(TOKEN)), 202);
    let deadline = Instant::now() + Duration::from_secs(20);
    let written = || {
        std::fs::read_dir(&captures)
            .map(|d| {
                d.filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".tlt"))
                })
                .count()
            })
            .unwrap_or(0)
    };
    while written() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(written(), 1, "one capture, asked once");
    let _ = std::fs::remove_dir_all(&dir);
}
