//! What a carrier of the stream says besides its bytes (docs/FORMAT.md,
//! "Carrying a stream"): a file's end, and over a WebSocket, how much of
//! the stream a reader has read.
//!
//! A browser reads every message a WebSocket brings, whether or not its
//! page keeps up: the sender's writes never wait, and a page that falls
//! behind would fall further behind without limit. So a reader says what
//! it has read ([`ReadReceipt`]), and the sender keeps no more than a
//! window of its choosing sent and not yet said read; past that it holds
//! its frames, and drops whole Blocks, as for any slow reader.

use alloc::string::String;

/// The reason of the WebSocket close (code 1000) after the last bytes of
/// a recorded file: the stream is whole, and no one should connect again
/// for more.
pub const END_OF_FILE: &str = "end of file";

/// A reader says what it has read each time it has read this many bytes
/// more. A sender's window is several times this, so that it never waits
/// for a reader that keeps up.
pub const SAY_READ_EVERY: u64 = 32 << 10;

/// The text message in which a reader says how many of the connection's
/// bytes it has read: `read ` and the count in decimal.
const READ: &str = "read ";

/// The longest text message a reader sends: `read ` and a `u64`.
pub const MAX_SAID: usize = READ.len() + 20;

/// A reader's count of the bytes one connection brought, and when to say
/// it.
#[derive(Clone, Debug, Default)]
pub struct ReadReceipt {
    read: u64,
    said: u64,
}

impl ReadReceipt {
    /// Counts `bytes` more read.
    pub fn took(&mut self, bytes: usize) {
        self.read = self.read.saturating_add(bytes as u64);
    }

    /// The message that says what was read, once [`SAY_READ_EVERY`]
    /// bytes were read since the last one; send it.
    pub fn due(&mut self) -> Option<String> {
        if self.read - self.said < SAY_READ_EVERY {
            return None;
        }
        self.said = self.read;
        Some(alloc::format!("{READ}{}", self.read))
    }

    /// Bytes read on this connection.
    pub fn read(&self) -> u64 {
        self.read
    }
}

/// The count in a reader's `read N` message, or `None` if it is not one.
pub fn said_read(text: &str) -> Option<u64> {
    let digits = text.strip_prefix(READ)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_says_what_it_read_every_so_often_and_is_understood() {
        let mut receipt = ReadReceipt::default();
        let step = (SAY_READ_EVERY / 2) as usize;
        let said: alloc::vec::Vec<String> = (0..7)
            .filter_map(|_| {
                receipt.took(step);
                receipt.due()
            })
            .collect();
        assert_eq!(said.len(), 3, "{said:?}");
        assert_eq!(said_read(&said[2]), Some(6 * step as u64));
        assert_eq!(receipt.read(), 7 * step as u64);
        assert!(said.iter().all(|s| s.len() <= MAX_SAID));
    }

    #[test]
    fn anything_else_is_not_a_count() {
        for text in [
            "",
            "read",
            "read ",
            "read -1",
            "read 1 ",
            "read 0x10",
            "Read 5",
            "read 99999999999999999999",
        ] {
            assert_eq!(said_read(text), None, "{text:?}");
        }
        assert_eq!(said_read("read 0"), Some(0));
        assert_eq!(
            said_read(&alloc::format!("read {}", u64::MAX)),
            Some(u64::MAX)
        );
    }
}
