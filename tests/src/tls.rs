//! Certificates made for a test with rcgen: a CA, and a server
//! certificate it signed (for `localhost` and `127.0.0.1`, or names given), so that a
//! client that trusts the CA's file checks a real chain.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A CA and the server certificate it signed.
pub struct Authority {
    /// The CA's certificate, PEM.
    pub ca_pem: String,
    /// The server's certificate, DER.
    pub server_der: CertificateDer<'static>,
    /// The server's key, PKCS #8 DER.
    server_key: Vec<u8>,
    /// The server's public key, as X.509's SubjectPublicKeyInfo (DER).
    server_spki: Vec<u8>,
}

impl Authority {
    /// A new CA, and a server certificate for localhost and 127.0.0.1.
    pub fn new() -> Authority {
        Authority::for_names(&["localhost", "127.0.0.1"])
    }

    /// A new CA, and a server certificate for `names` only.
    pub fn for_names(names: &[&str]) -> Authority {
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "typhon-live test CA");
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        let key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let server = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        Authority {
            ca_pem: ca.pem(),
            server_der: server.der().clone(),
            server_key: key.serialize_der(),
            server_spki: rcgen::PublicKeyData::subject_public_key_info(&key),
        }
    }

    /// The SHA-256 of the server's public key, base64: what Chromium's
    /// `--ignore-certificate-errors-spki-list` takes.
    pub fn spki_sha256_base64(&self) -> String {
        let digest = ring::digest::digest(&ring::digest::SHA256, &self.server_spki);
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, digest.as_ref())
    }

    /// The CA's certificate written to `dir`, for a client to trust.
    pub fn write_ca(&self, dir: &Path) -> PathBuf {
        let path = dir.join("ca.pem");
        std::fs::write(&path, &self.ca_pem).unwrap();
        path
    }

    /// The server's certificate and key written to `dir` as PEM, for a
    /// server to be given: `(certificate, key)`.
    pub fn write_server(&self, dir: &Path) -> (PathBuf, PathBuf) {
        let pem = |label: &str, der: &[u8]| {
            let body = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, der);
            let lines: Vec<&str> = body
                .as_bytes()
                .chunks(64)
                .map(|l| std::str::from_utf8(l).unwrap())
                .collect();
            format!(
                "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
                lines.join("\n")
            )
        };
        let (cert, key) = (dir.join("server.pem"), dir.join("server.key"));
        std::fs::write(&cert, pem("CERTIFICATE", &self.server_der)).unwrap();
        std::fs::write(&key, pem("PRIVATE KEY", &self.server_key)).unwrap();
        (cert, key)
    }

    /// A rustls server that presents the server certificate.
    pub fn server(&self) -> Arc<rustls::ServerConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.server_key.clone()));
        Arc::new(
            rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![self.server_der.clone()], key)
                .unwrap(),
        )
    }
}

impl Default for Authority {
    fn default() -> Authority {
        Authority::new()
    }
}
