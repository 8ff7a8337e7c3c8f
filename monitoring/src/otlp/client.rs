//! One signal's exports posted to its collector: ureq, over rustls for
//! `https://` (the target's CA file, or else the Web PKI's roots), the
//! body gzipped on option, the target's headers, and the retries of
//! [`retry`](super::retry) within the export's deadline.

use std::io::Write;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use typhon_live_remote::trust;
use ureq::tls::{Certificate, RootCerts, TlsConfig};
use ureq::Agent;

use super::retry::{retry_after, retryable, Backoff};
use super::settings::{Compression, Target};

/// The most of a collector's answer that is read (a success's body is a
/// small protobuf, its partial success if any).
const MAX_ANSWER: u64 = 64 * 1024;

/// A signal's client.
pub struct Client {
    agent: Agent,
    target: Target,
}

impl Client {
    /// A client for `target`; an error names a CA file that cannot be
    /// read or holds no certificate.
    pub fn new(target: Target) -> Result<Client, String> {
        let roots = match &target.ca {
            None => RootCerts::WebPki,
            Some(path) => RootCerts::Specific(Arc::new(certificates(path)?)),
        };
        let agent = Agent::config_builder()
            // A status is an answer to act on (retry, or say it), not an
            // error without its Retry-After.
            .http_status_as_error(false)
            // A redirected POST would lose its body.
            .max_redirects(0)
            .user_agent(concat!("typhon-live-relay/", env!("CARGO_PKG_VERSION")))
            .tls_config(TlsConfig::builder().root_certs(roots).build())
            .build()
            .new_agent();
        Ok(Client { agent, target })
    }

    /// The signal's URL.
    pub fn url(&self) -> &str {
        &self.target.url
    }

    /// Posts a protobuf body, tried again while the collector answers
    /// that it may be and the deadline allows: the body of the
    /// collector's success (see [`answer`](super::answer)), or an error
    /// saying why the export is lost.
    pub fn post(&self, body: &[u8]) -> Result<Vec<u8>, String> {
        let target = &self.target;
        let deadline = Instant::now() + target.timeout;
        let gzipped;
        let body = match target.compression {
            Compression::None => body,
            Compression::Gzip => {
                gzipped = gzip(body);
                &gzipped[..]
            }
        };
        let mut backoff = Backoff::default();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let mut request = self
                .agent
                .post(&target.url)
                .header("Content-Type", "application/x-protobuf");
            if target.compression == Compression::Gzip {
                request = request.header("Content-Encoding", "gzip");
            }
            for (name, value) in &target.headers {
                request = request.header(name, value);
            }
            let mut response = request
                .config()
                .timeout_global(Some(left))
                .build()
                .send(body)
                .map_err(|e| e.to_string())?;
            let status = response.status();
            // Read whole, so that the connection can be used again. An
            // answer that cannot be read still says the export was taken.
            let answer = response
                .body_mut()
                .with_config()
                .limit(MAX_ANSWER)
                .read_to_vec()
                .unwrap_or_default();
            if status.is_success() {
                return Ok(answer);
            }
            let why = format!("the collector answered {status}");
            if !retryable(status.as_u16()) {
                return Err(why);
            }
            let asked = response
                .headers()
                .get("retry-after")
                .and_then(|value| value.to_str().ok())
                .and_then(|value| retry_after(value, SystemTime::now()));
            let wait = asked.unwrap_or_else(|| backoff.next_wait());
            if Instant::now() + wait >= deadline {
                return Err(format!(
                    "{why}; trying again in {:.1} s{} would pass the export's {:.1} s deadline",
                    wait.as_secs_f64(),
                    if asked.is_some() {
                        " (Retry-After)"
                    } else {
                        ""
                    },
                    target.timeout.as_secs_f64()
                ));
            }
            std::thread::sleep(wait);
        }
    }
}

/// The certificates of a PEM file, read as a viewer reads its `--ca`.
fn certificates(path: &std::path::Path) -> Result<Vec<Certificate<'static>>, String> {
    let certificates = trust::certificates(path).map_err(|e| format!("OTLP: {e}"))?;
    Ok(certificates
        .iter()
        .map(|der| Certificate::from_der(der).to_owned())
        .collect())
}

fn gzip(body: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 4),
        flate2::Compression::fast(),
    );
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(body);
    encoder.finish().unwrap_or_default()
}
