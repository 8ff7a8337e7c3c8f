//! What the relay serves over TLS (beyond loopback always, on it when
//! asked): the certificate read or made and the token read or drawn,
//! once for all of it ([`Security`]), and, on the viewers' port,
//! [`typhon_live_remote`]'s gate in front of the fanout. A connection refused before its token is counted
//! (`typhon_viewers_refused_total`) and told on stderr at a rate
//! [`Failures`] keeps down: a scan of the port is not a flood of lines.

use std::net::{IpAddr, TcpListener};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use typhon_live_remote::gate::Gate;
use typhon_live_remote::handshake;
use typhon_live_remote::identity::Identity;
use typhon_live_remote::rustls;
use typhon_live_remote::token::Token;

use crate::announce::tell;
use crate::config::{Tls, TokenFrom};
use crate::error::RelayError;
use crate::fanout::Input;
use typhon_live_monitoring::failures::Failures;
use typhon_live_monitoring::metrics::Metrics;

/// The relay's TLS identity and the token, read or made once for
/// everything it serves over TLS (the viewers' port, the browser viewer,
/// `/metrics`).
pub struct Security {
    /// The certificate and its key.
    pub identity: Identity,
    /// The token viewers present (and scrapers, as a bearer token).
    pub token: Token,
    /// A TLS server presenting the identity.
    pub tls: Arc<rustls::ServerConfig>,
    /// Names the relay is reached by, besides its address and loopback's.
    pub public_hosts: Vec<String>,
}

impl Security {
    /// The certificate and token `tls` says, for a relay bound to
    /// `address`; a token drawn now is said on stdout, once. An error
    /// names a certificate, key or token that cannot be used.
    pub fn new(who: &str, tls: &Tls, address: IpAddr) -> Result<Security, RelayError> {
        let bad = |e: typhon_live_remote::RemoteError| RelayError::BadSettings(e.to_string());
        let identity = match &tls.identity {
            Some((cert, key)) => Identity::from_files(cert, key).map_err(bad)?,
            None => Identity::self_signed(&names(tls, address)).map_err(bad)?,
        };
        let token = match &tls.token {
            TokenFrom::File(path) => Token::from_file(path).map_err(bad)?,
            TokenFrom::Environment(text) => Token::new(text)
                .map_err(|e| RelayError::BadSettings(format!("TYPHON_LIVE_TOKEN: {e}")))?,
            TokenFrom::Generated => Token::generate().map_err(bad)?,
        };
        if tls.token == TokenFrom::Generated {
            // Said once: it is not written anywhere else.
            tell(who, &format!("viewers' token {}", token.as_str()));
        }
        Ok(Security {
            tls: identity.server().map_err(bad)?,
            identity,
            token,
            public_hosts: tls.public_hosts.clone(),
        })
    }

    /// How the certificate is told: where it came from, and its
    /// fingerprint.
    pub fn certificate(&self) -> String {
        let made = if self.identity.generated_pem.is_some() {
            "made at start"
        } else {
            "given"
        };
        format!(
            "certificate ({made}) SHA-256 {}",
            self.identity.fingerprint()
        )
    }
}

/// Serves the viewers that present the token on `listener`, over TLS, to
/// the merging thread's `inbox`, and says where.
pub fn serve(
    who: &str,
    security: &Security,
    listener: TcpListener,
    inbox: SyncSender<Input>,
    metrics: Arc<Metrics>,
) -> Result<(), RelayError> {
    let bound = listener
        .local_addr()
        .map_err(|e| RelayError::CannotListen {
            addr: "the viewers' port".into(),
            reason: e.to_string(),
        })?;
    tell(
        who,
        &format!(
            "viewers on {bound} over TLS with a token; {}",
            security.certificate()
        ),
    );
    let gate = Gate {
        tls: Arc::clone(&security.tls),
        token: security.token.clone(),
        deadline: handshake::DEADLINE,
    };
    let failures = Mutex::new(Failures::new(format!("{who}: a viewer's handshake")));
    std::thread::spawn(move || {
        gate.serve(
            listener,
            move |stream| {
                let _ = inbox.send(Input::Viewer(Box::new(stream)));
            },
            move |refusal| {
                metrics.viewer_refused(refusal.reason());
                let mut failures = failures.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(line) = failures.failed(&refusal.to_string(), Instant::now()) {
                    eprintln!("{line}");
                }
            },
        )
    });
    Ok(())
}

/// The names a certificate made at start is for: the bound address if it
/// is one, loopback's, and the public hosts given.
fn names(tls: &Tls, address: IpAddr) -> Vec<String> {
    let mut names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    if !address.is_unspecified() {
        names.push(address.to_string());
    }
    names.extend(tls.public_hosts.iter().cloned());
    names.sort();
    names.dedup();
    names
}
