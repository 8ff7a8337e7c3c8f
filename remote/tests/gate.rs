//! The gate's bounds, with a short deadline: a peer that trickles its
//! handshake a byte at a time is closed at the deadline all the same, and
//! a line that is not the token's is refused, saying so.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use typhon_live_remote::fingerprint::Fingerprint;
use typhon_live_remote::gate::Gate;
use typhon_live_remote::handshake::{self, Refusal};
use typhon_live_remote::identity::Identity;
use typhon_live_remote::token::Token;
use typhon_live_remote::trust::Trust;
use typhon_live_remote::RemoteError;

const DEADLINE: Duration = Duration::from_secs(1);

/// A gate on 127.0.0.1 with token `token`: its address, its
/// certificate's fingerprint, and what it admitted or refused.
fn gate(token: &str) -> (String, Fingerprint, mpsc::Receiver<Result<(), Refusal>>) {
    let identity = Identity::self_signed(&["localhost".into()]).unwrap();
    let fingerprint = identity.fingerprint();
    let gate = Gate {
        tls: identity.server().unwrap(),
        token: Token::new(token).unwrap(),
        deadline: DEADLINE,
    };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tell, told) = mpsc::channel();
    let refused = tell.clone();
    std::thread::spawn(move || {
        gate.serve(
            listener,
            move |mut stream| {
                let _ = stream.write_all(b"TL");
                let _ = stream.flush();
                let _ = tell.send(Ok(()));
            },
            move |why| {
                let _ = refused.send(Err(why));
            },
        )
    });
    (addr, fingerprint, told)
}

#[test]
fn a_handshake_trickled_a_byte_at_a_time_is_closed_at_its_deadline() {
    let (addr, _, told) = gate("token");
    let mut socket = TcpStream::connect(&addr).unwrap();
    let started = Instant::now();
    // A byte every 100 ms: each read the server makes returns well within
    // any per-read timeout, but the whole takes longer than the deadline.
    let hello = [0x16u8, 0x03, 0x01, 0x02, 0x00];
    for byte in hello.iter().cycle().take(40) {
        if socket.write_all(&[*byte]).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let refusal = told.recv_timeout(Duration::from_secs(5)).unwrap();
    let after = started.elapsed();
    assert_eq!(refusal, Err(Refusal::TimedOut));
    assert!(after < DEADLINE + Duration::from_millis(1500), "{after:?}");
}

#[test]
fn the_right_token_is_answered_ok_then_the_stream_and_anything_else_no() {
    let (addr, fingerprint, told) = gate("right-token");
    let trust = Trust::Pinned(fingerprint).client().unwrap();
    let open = |token: &str| {
        let socket = TcpStream::connect(&addr).unwrap();
        let deadline = Instant::now() + handshake::DEADLINE;
        handshake::open(
            socket,
            "localhost",
            trust.clone(),
            &Token::new(token).unwrap(),
            deadline,
        )
    };
    let mut stream = open("right-token").unwrap();
    assert_eq!(told.recv_timeout(Duration::from_secs(5)).unwrap(), Ok(()));
    let mut first = [0u8; 2];
    stream.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"TL");

    match open("wrong-token") {
        Err(RemoteError::Refused(why)) => assert_eq!(why, "wrong token"),
        other => panic!("{:?}", other.map(|_| ())),
    }
    assert_eq!(
        told.recv_timeout(Duration::from_secs(5)).unwrap(),
        Err(Refusal::WrongToken)
    );
}
