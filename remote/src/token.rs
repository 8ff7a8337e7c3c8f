//! The access token a viewer presents after TLS: read from a file or the
//! environment, or drawn at start (128 bits from the operating system,
//! 32 hex digits) and printed once. Compared in constant time.

use std::path::Path;

use crate::RemoteError;

/// The most bytes a token may have.
pub const MAX_TOKEN: usize = 128;

/// An access token: 1 to [`MAX_TOKEN`] visible ASCII characters.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// `text` as a token, checked.
    pub fn new(text: &str) -> Result<Token, RemoteError> {
        if text.is_empty() || text.len() > MAX_TOKEN {
            return Err(RemoteError::BadToken(format!(
                "has {} bytes, not 1 to {MAX_TOKEN}",
                text.len()
            )));
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(RemoteError::BadToken(
                "has a character that is not visible ASCII".into(),
            ));
        }
        Ok(Token(text.to_owned()))
    }

    /// A new token: 128 bits from the operating system, as 32 hex digits.
    pub fn generate() -> Result<Token, RemoteError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| RemoteError::Generate(e.to_string()))?;
        Ok(Token(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// The token in a file: its first line, trimmed.
    pub fn from_file(path: &Path) -> Result<Token, RemoteError> {
        const WHAT: &str = "the token file";
        let text = std::fs::read_to_string(path).map_err(|e| RemoteError::Unreadable {
            what: WHAT,
            path: path.into(),
            reason: e.to_string(),
        })?;
        let line = text.lines().next().unwrap_or("").trim();
        Token::new(line).map_err(|e| RemoteError::BadFile {
            what: WHAT,
            path: path.into(),
            reason: e.to_string(),
        })
    }

    /// The token's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `given` is the token, in time that does not depend on where
    /// they differ.
    pub fn matches(&self, given: &[u8]) -> bool {
        equal(self.0.as_bytes(), given)
    }
}

/// Whether `given` is `secret`, in time that depends on `secret`'s
/// length only, not on where they differ.
pub fn equal(secret: &[u8], given: &[u8]) -> bool {
    let mut differ = u8::from(secret.len() != given.len());
    for (i, &byte) in secret.iter().enumerate() {
        differ |= byte ^ given.get(i).copied().unwrap_or(!byte);
    }
    differ == 0
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never into a log.
        f.write_str("Token(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_matches_itself_only() {
        let token = Token::new("s3cret-token").unwrap();
        assert!(token.matches(b"s3cret-token"));
        for other in [&b""[..], b"s3cret-toke", b"s3cret-tokens", b"S3cret-token"] {
            assert!(!token.matches(other), "{other:?}");
        }
        let (a, b) = (Token::generate().unwrap(), Token::generate().unwrap());
        assert_eq!(a.as_str().len(), 32);
        assert_ne!(a, b);
        assert_eq!(format!("{a:?}"), "Token(..)");
    }

    #[test]
    fn a_token_that_cannot_be_sent_is_refused() {
        for bad in [
            "",
            "with space",
            "tab\there",
            &"x".repeat(MAX_TOKEN + 1),
            "é",
        ] {
            assert!(Token::new(bad).is_err(), "{bad:?}");
        }
        assert!(Token::new(&"x".repeat(MAX_TOKEN)).is_ok());
    }
}
