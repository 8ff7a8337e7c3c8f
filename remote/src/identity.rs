//! The server's TLS identity: a certificate chain and key from PEM files
//! (`--tls-cert`, `--tls-key`), or a self-signed certificate made at
//! start for the names the server is reached by, which a viewer pins by
//! its [`Fingerprint`].

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::fingerprint::Fingerprint;
use crate::RemoteError;

/// A certificate chain and its key.
pub struct Identity {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    /// The certificate as PEM, if it was made at start (one given is in
    /// its file already): for a viewer to trust as its CA file.
    pub generated_pem: Option<String>,
}

impl Identity {
    /// The chain in `cert` (the server's certificate first) and the key
    /// in `key`, both PEM; an error names the file and what is wrong.
    pub fn from_files(cert: &Path, key: &Path) -> Result<Identity, RemoteError> {
        let read = |what: &'static str, path: &Path| {
            std::fs::read(path).map_err(|e| RemoteError::Unreadable {
                what,
                path: path.into(),
                reason: e.to_string(),
            })
        };
        let bad = |what: &'static str, path: &Path, reason: String| RemoteError::BadFile {
            what,
            path: path.into(),
            reason,
        };
        let pem = read("the TLS certificate", cert)?;
        let chain = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad("the TLS certificate", cert, e.to_string()))?;
        if chain.is_empty() {
            return Err(bad(
                "the TLS certificate",
                cert,
                "holds no PEM certificate".into(),
            ));
        }
        let pem = read("the TLS key", key)?;
        let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| {
            bad(
                "the TLS key",
                key,
                format!("holds no PEM private key ({e})"),
            )
        })?;
        let identity = Identity {
            chain,
            key,
            generated_pem: None,
        };
        // A key that is not the certificate's is told now, not at the
        // first viewer.
        identity.server()?;
        Ok(identity)
    }

    /// A self-signed certificate for `names` (DNS names or IP
    /// addresses), with a new key.
    pub fn self_signed(names: &[String]) -> Result<Identity, RemoteError> {
        let generate = |e: rcgen::Error| RemoteError::Generate(e.to_string());
        let key = rcgen::KeyPair::generate().map_err(generate)?;
        let mut params = rcgen::CertificateParams::new(names.to_vec()).map_err(generate)?;
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "typhon-live");
        let cert = params.self_signed(&key).map_err(generate)?;
        Ok(Identity {
            chain: vec![cert.der().clone()],
            key: PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            generated_pem: Some(cert.pem()),
        })
    }

    /// The fingerprint of the server's certificate.
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint::of(&self.chain[0])
    }

    /// A TLS server presenting this identity (TLS 1.2 and 1.3, no client
    /// certificates).
    pub fn server(&self) -> Result<Arc<rustls::ServerConfig>, RemoteError> {
        let config = rustls::ServerConfig::builder_with_provider(crate::provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| RemoteError::Tls(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(self.chain.clone(), self.key.clone_key())
            .map_err(|e| RemoteError::Tls(format!("the certificate and key: {e}")))?;
        Ok(Arc::new(config))
    }
}
