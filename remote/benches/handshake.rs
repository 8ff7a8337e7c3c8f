//! What a viewer's connection to a port beyond loopback costs, side by
//! side with a plain one, on 127.0.0.1: TCP until the server's first
//! bytes, and TCP, TLS and the token until the server's `OK` (the
//! certificate pinned). Each
//! iteration is one whole connection, the server's end included (a gate
//! on another thread).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use typhon_live_remote::gate::Gate;
use typhon_live_remote::handshake;
use typhon_live_remote::identity::Identity;
use typhon_live_remote::token::Token;
use typhon_live_remote::trust::Trust;

fn connections(c: &mut Criterion) {
    let plain = TcpListener::bind("127.0.0.1:0").unwrap();
    let plain_addr = plain.local_addr().unwrap();
    // A plain port answers at once, as the gate answers `OK`.
    std::thread::spawn(move || {
        for socket in plain.incoming().flatten() {
            let _ = (&socket).write_all(b"OK\n");
        }
    });

    let identity = Identity::self_signed(&["localhost".into()]).unwrap();
    let pinned = Trust::Pinned(identity.fingerprint()).client().unwrap();
    let token = Token::new("bench-token").unwrap();
    let gate = Gate {
        tls: identity.server().unwrap(),
        token: token.clone(),
        deadline: handshake::DEADLINE,
    };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || gate.serve(listener, drop, drop));

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
    group.bench_function("TCP + TLS + token, pinned", |b| {
        b.iter(|| {
            let socket = TcpStream::connect(addr).unwrap();
            let deadline = Instant::now() + handshake::DEADLINE;
            handshake::open(socket, "localhost", pinned.clone(), &token, deadline).unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, connections);
criterion_main!(benches);
