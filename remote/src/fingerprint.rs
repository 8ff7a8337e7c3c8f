//! A certificate's SHA-256 fingerprint: what a viewer pins a self-signed
//! server by. Written as `openssl x509 -noout -fingerprint -sha256`
//! prints it (upper-case hex pairs joined by colons), so that the two can
//! be compared by eye; read with or without the colons, in either case,
//! after an optional `sha256:`.

use std::fmt;

use crate::RemoteError;

/// The SHA-256 of a certificate's DER.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// The fingerprint of a certificate.
    pub fn of(der: &[u8]) -> Fingerprint {
        let digest = ring::digest::digest(&ring::digest::SHA256, der);
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(digest.as_ref());
        Fingerprint(bytes)
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, byte) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{byte:02X}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

impl std::str::FromStr for Fingerprint {
    type Err = RemoteError;

    fn from_str(text: &str) -> Result<Fingerprint, RemoteError> {
        let bad = || RemoteError::BadFingerprint(text.to_owned());
        let trimmed = text.trim();
        let hex = trimmed
            .strip_prefix("sha256:")
            .or_else(|| trimmed.strip_prefix("SHA256:"))
            .unwrap_or(trimmed);
        let digits: Vec<u8> = hex.bytes().filter(|&b| b != b':').collect();
        if digits.len() != 64 {
            return Err(bad());
        }
        let mut bytes = [0u8; 32];
        for (byte, pair) in bytes.iter_mut().zip(digits.chunks(2)) {
            let pair = std::str::from_utf8(pair).map_err(|_| bad())?;
            *byte = u8::from_str_radix(pair, 16).map_err(|_| bad())?;
        }
        Ok(Fingerprint(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_reads_what_it_writes_and_what_openssl_prints() {
        let fingerprint = Fingerprint::of(b"not a certificate, but bytes all the same");
        let written = fingerprint.to_string();
        assert_eq!(written.len(), 32 * 3 - 1);
        assert_eq!(written.parse::<Fingerprint>().unwrap(), fingerprint);
        let plain = written.replace(':', "").to_lowercase();
        assert_eq!(plain.parse::<Fingerprint>().unwrap(), fingerprint);
        let prefixed = format!("sha256:{plain}");
        assert_eq!(prefixed.parse::<Fingerprint>().unwrap(), fingerprint);
        for bad in [
            "",
            "AB:CD",
            &written[3..],
            &format!("{plain}00"),
            &plain.replace('a', "g"),
        ] {
            assert!(bad.parse::<Fingerprint>().is_err(), "{bad}");
        }
    }
}
