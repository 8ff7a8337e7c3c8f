//! A protected router through the real server: each rule of the guard
//! seen refusing a request that breaks it, and a request that keeps them
//! all served, a WebSocket included (tungstenite's client).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use tungstenite::client::IntoClientRequest;
use tungstenite::Message;
use typhon_live_http::axum::extract::ws::{Message as Frame, WebSocketUpgrade};
use typhon_live_http::axum::routing::get;
use typhon_live_http::axum::Router;
use typhon_live_http::{guard, serve, Guard, Limits};

/// A page and an echoing WebSocket behind a guard: the address and the
/// token.
fn start() -> (SocketAddr, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let token = guard::new_token().unwrap();
    let app = Router::new()
        .route("/", get(|| async { "the index" }))
        .route("/page", get(|| async { "the page" }))
        .route(
            "/socket",
            get(|ws: WebSocketUpgrade| async {
                ws.on_upgrade(|mut socket| async move {
                    while let Some(Ok(Frame::Binary(bytes))) = socket.recv().await {
                        if socket.send(Frame::Binary(bytes)).await.is_err() {
                            return;
                        }
                    }
                })
            }),
        );
    let app = Guard::new(&token, addr).protect(app);
    std::thread::spawn(move || serve(listener, app, Limits::default(), None));
    (addr, token)
}

/// The answer's head to `GET path` with `headers` (a `Host` among them,
/// or not).
fn head(addr: SocketAddr, path: &str, headers: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let request = format!("GET {path} HTTP/1.1\r\n{headers}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}

#[test]
fn each_rule_refuses_what_breaks_it_and_every_answer_carries_the_policy() {
    let (addr, token) = start();
    let host = format!("Host: {addr}\r\n");
    let page = format!("/{token}/page");

    let ok = head(addr, &page, &host);
    assert!(
        ok.starts_with("HTTP/1.1 200") && ok.ends_with("the page"),
        "{ok}"
    );
    let ok = ok.to_ascii_lowercase();
    assert!(
        ok.contains("content-security-policy: default-src 'self'"),
        "{ok}"
    );
    assert!(ok.contains("referrer-policy: no-referrer"), "{ok}");
    // The index is the token's directory, where relative URLs resolve.
    let index = head(addr, &format!("/{token}/"), &host);
    assert!(
        index.starts_with("HTTP/1.1 200") && index.ends_with("the index"),
        "{index}"
    );
    let bare = head(addr, &format!("/{token}"), &host).to_ascii_lowercase();
    assert!(bare.starts_with("http/1.1 308"), "{bare}");
    assert!(bare.contains(&format!("location: /{token}/\r\n")), "{bare}");
    let local = head(addr, &page, &format!("Host: localhost:{}\r\n", addr.port()));
    assert!(local.starts_with("HTTP/1.1 200"), "{local}");

    let wrong_token = head(addr, &format!("/{}/page", "0".repeat(32)), &host);
    assert!(wrong_token.starts_with("HTTP/1.1 404"), "{wrong_token}");
    assert!(wrong_token
        .to_ascii_lowercase()
        .contains("content-security-policy"));
    assert!(head(addr, "/page", &host).starts_with("HTTP/1.1 404"));

    // DNS rebinding: a name of the attacker's that resolves here.
    let rebound = head(
        addr,
        &page,
        &format!("Host: evil.example:{}\r\n", addr.port()),
    );
    assert!(rebound.starts_with("HTTP/1.1 421"), "{rebound}");
    assert!(head(addr, &page, "").starts_with("HTTP/1.1 421"), "no Host");

    let foreign = format!("{host}Origin: http://evil.example\r\n");
    assert!(head(addr, &page, &foreign).starts_with("HTTP/1.1 403"));
    let own = format!("{host}Origin: http://{addr}\r\n");
    assert!(head(addr, &page, &own).starts_with("HTTP/1.1 200"));
}

/// A WebSocket handshake to the echo with `origin`: the socket, or the
/// refusal's status.
fn socket(
    addr: SocketAddr,
    token: &str,
    origin: Option<&str>,
) -> Result<tungstenite::WebSocket<TcpStream>, u16> {
    let mut request = format!("ws://{addr}/{token}/socket")
        .into_client_request()
        .unwrap();
    if let Some(origin) = origin {
        request
            .headers_mut()
            .insert("Origin", origin.parse().unwrap());
    }
    let stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    match tungstenite::client(request, stream) {
        Ok((socket, _)) => Ok(socket),
        Err(tungstenite::HandshakeError::Failure(tungstenite::Error::Http(answer))) => {
            Err(answer.status().as_u16())
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_websocket_is_served_to_the_pages_own_origin_only() {
    let (addr, token) = start();
    let own = format!("http://{addr}");
    let mut ws = socket(addr, &token, Some(&own)).expect("the page's own origin");
    ws.send(Message::binary(vec![1u8, 2, 3])).unwrap();
    assert_eq!(ws.read().unwrap(), Message::binary(vec![1u8, 2, 3]));

    assert_eq!(
        socket(addr, &token, Some("http://evil.example")).err(),
        Some(403)
    );
    assert_eq!(socket(addr, &token, None).err(), Some(403), "no Origin");
    let wrong = "f".repeat(32);
    assert_eq!(socket(addr, &wrong, Some(&own)).err(), Some(404));
}
