//! How a viewer checks the server it connects to: the certificates of a
//! CA file (the chain and the name, as any TLS client does), or the
//! server certificate's fingerprint pinned (a self-signed server's: the
//! name is not checked, the handshake's signature is).

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use crate::fingerprint::Fingerprint;
use crate::RemoteError;

/// What a viewer trusts.
#[derive(Clone, Debug)]
pub enum Trust {
    /// The certificates of a CA file.
    Ca(Vec<CertificateDer<'static>>),
    /// The server's certificate, by its SHA-256.
    Pinned(Fingerprint),
}

impl Trust {
    /// The certificates of the PEM file at `path`.
    pub fn ca_file(path: &Path) -> Result<Trust, RemoteError> {
        certificates(path).map(Trust::Ca)
    }

    /// A TLS client that trusts this.
    pub fn client(&self) -> Result<Arc<rustls::ClientConfig>, RemoteError> {
        let provider = crate::provider();
        let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| RemoteError::Tls(e.to_string()))?;
        let config = match self {
            Trust::Ca(certificates) => {
                let mut roots = rustls::RootCertStore::empty();
                for certificate in certificates {
                    roots
                        .add(certificate.clone())
                        .map_err(|e| RemoteError::Tls(format!("the CA file: {e}")))?;
                }
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            Trust::Pinned(fingerprint) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Pinned {
                    fingerprint: *fingerprint,
                    provider,
                }))
                .with_no_client_auth(),
        };
        Ok(Arc::new(config))
    }
}

/// The certificates of the PEM file at `path` (a CA file: a viewer's
/// `--ca`, the relay's `--otlp-ca`); an error names the file and says
/// what is wrong.
pub fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, RemoteError> {
    const WHAT: &str = "the CA file";
    let pem = std::fs::read(path).map_err(|e| RemoteError::Unreadable {
        what: WHAT,
        path: path.into(),
        reason: e.to_string(),
    })?;
    let certificates = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| RemoteError::BadFile {
            what: WHAT,
            path: path.into(),
            reason: e.to_string(),
        })?;
    if certificates.is_empty() {
        return Err(RemoteError::BadFile {
            what: WHAT,
            path: path.into(),
            reason: "holds no PEM certificate".into(),
        });
    }
    Ok(certificates)
}

/// A server certificate is good if its SHA-256 is the pinned one; the
/// handshake's signatures are checked against it as usual, so that only
/// the holder of its key can complete the handshake.
#[derive(Debug)]
struct Pinned {
    fingerprint: Fingerprint,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let presented = Fingerprint::of(end_entity);
        if presented == self.fingerprint {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "the server's certificate has the fingerprint {presented}, not the pinned {}",
                self.fingerprint
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
