//! What a viewer's connection to a port beyond loopback costs, side by
//! side with a plain one, on 127.0.0.1: TCP until the server's first
//! bytes, and TCP, TLS and the token until the server's `OK` (the
//! certificate pinned). Each iteration is one whole connection, the
//! server's end included (a gate on another thread). Then a stream's
//! throughput: 8 MiB in 16 KiB frames, each written and flushed as the
//! relay writes a viewer's frames, plain and over TLS, its connection
//! included.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use typhon_live_remote::gate::Gate;
use typhon_live_remote::handshake;
use typhon_live_remote::identity::Identity;
use typhon_live_remote::token::Token;
use typhon_live_remote::trust::Trust;
use typhon_live_remote::{ClientStream, ServerStream};

/// A viewer of a gate serving on 127.0.0.1 with a self-signed
/// certificate, which the viewer pins.
struct Viewer {
    addr: SocketAddr,
    pinned: Arc<rustls::ClientConfig>,
    token: Token,
}

impl Viewer {
    /// Starts a gate handing each admitted stream to `admit`.
    fn of_gate(admit: impl Fn(ServerStream) + Send + Sync + 'static) -> Viewer {
        let identity = Identity::self_signed(&["localhost".into()]).unwrap();
        let token = Token::new("bench-token").unwrap();
        let gate = Gate {
            tls: identity.server().unwrap(),
            token: token.clone(),
            deadline: handshake::DEADLINE,
        };
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || gate.serve(listener, admit, drop));
        Viewer {
            addr,
            pinned: Trust::Pinned(identity.fingerprint()).client().unwrap(),
            token,
        }
    }

    /// A connection through the whole exchange, to `OK`.
    fn open(&self) -> ClientStream {
        let socket = TcpStream::connect(self.addr).unwrap();
        let deadline = Instant::now() + handshake::DEADLINE;
        handshake::open(
            socket,
            "localhost",
            self.pinned.clone(),
            &self.token,
            deadline,
        )
        .unwrap()
    }
}

fn connections(c: &mut Criterion) {
    let plain = TcpListener::bind("127.0.0.1:0").unwrap();
    let plain_addr = plain.local_addr().unwrap();
    // A plain port answers at once, as the gate answers `OK`.
    std::thread::spawn(move || {
        for socket in plain.incoming().flatten() {
            let _ = (&socket).write_all(b"OK\n");
        }
    });

    let viewer = Viewer::of_gate(drop);

    let mut group = c.benchmark_group("connection");
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("plain TCP, to the first bytes", |b| {
        b.iter(|| {
            let mut socket = TcpStream::connect(plain_addr).unwrap();
            let mut ok = [0u8; 3];
            socket.read_exact(&mut ok).unwrap();
            socket
        })
    });
    group.bench_function("TCP + TLS + token, pinned", |b| b.iter(|| viewer.open()));
    group.finish();
}

/// Bytes a stream carries per iteration, and its frames' size.
const STREAM: usize = 8 << 20;
const FRAME: usize = 16 << 10;

/// Writes [`STREAM`] bytes to `socket` a frame at a time, each flushed
/// (for TLS: sent as its own records, as the relay sends a frame).
fn stream_to(mut socket: impl Write) -> std::io::Result<()> {
    let frame = vec![0x5a; FRAME];
    for _ in 0..STREAM / FRAME {
        socket.write_all(&frame)?;
        socket.flush()?;
    }
    Ok(())
}

/// Reads `socket` to its end; the bytes read.
fn drain(mut socket: impl Read) -> usize {
    let (mut buf, mut total) = (vec![0u8; 64 << 10], 0);
    loop {
        match socket.read(&mut buf) {
            Ok(0) => return total,
            Ok(n) => total += n,
            Err(e) => panic!("after {total} bytes: {e}"),
        }
    }
}

fn streams(c: &mut Criterion) {
    let plain = TcpListener::bind("127.0.0.1:0").unwrap();
    let plain_addr = plain.local_addr().unwrap();
    std::thread::spawn(move || {
        for socket in plain.incoming().flatten() {
            std::thread::spawn(move || stream_to(socket));
        }
    });

    let viewer = Viewer::of_gate(|mut stream: ServerStream| {
        std::thread::spawn(move || {
            stream_to(&mut stream)?;
            // The end said in TLS, so that the viewer reads an end, not
            // a truncation.
            stream.conn.send_close_notify();
            stream.flush()
        });
    });

    let mut group = c.benchmark_group("stream");
    group.throughput(Throughput::Bytes(STREAM as u64));
    group.measurement_time(Duration::from_secs(10));
    group.sample_size(20);
    group.bench_function("plain TCP", |b| {
        b.iter(|| assert_eq!(drain(TcpStream::connect(plain_addr).unwrap()), STREAM))
    });
    group.bench_function("TLS + token, pinned", |b| {
        b.iter(|| assert_eq!(drain(viewer.open()), STREAM))
    });
    group.finish();
}

criterion_group!(benches, connections, streams);
criterion_main!(benches);
