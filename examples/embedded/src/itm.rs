//! The ITM's stimulus port 0 as the link, for real hardware: a debug probe
//! reads it over SWO.
//!
//! `cortex_m::itm::write_all` waits for the port's FIFO with no bound, and
//! a port that no debugger enabled never reports ready: the firmware would
//! stop in its first write. Here a write first checks that the ITM and
//! port 0 are enabled, and gives up after [`SPIN_LIMIT`] polls of a FIFO
//! that stays full; either way the frame counts as dropped and the main
//! loop goes on.

use cortex_m::peripheral::ITM;

/// Polls of a full FIFO before a write gives up: about a millisecond at
/// 16 MHz, hundreds of bytes' time on a 2 MHz SWO line.
const SPIN_LIMIT: u32 = 4_000;
/// TCR: the ITM is enabled.
const TCR_ITMENA: u32 = 1 << 0;

/// Why the ITM did not take a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ItmError {
    /// The ITM or stimulus port 0 is not enabled (no debugger set it up).
    Disabled,
    /// The port's FIFO stayed full for [`SPIN_LIMIT`] polls.
    Stalled,
}

impl core::fmt::Display for ItmError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            ItmError::Disabled => "the ITM or its stimulus port 0 is not enabled",
            ItmError::Stalled => "the ITM's stimulus port stayed full",
        })
    }
}

impl core::error::Error for ItmError {}

impl embedded_io::Error for ItmError {
    fn kind(&self) -> embedded_io::ErrorKind {
        embedded_io::ErrorKind::Other
    }
}

/// Stimulus port 0 as an `embedded_io::Write`.
pub struct ItmPort {
    itm: ITM,
    errors: u32,
}

impl ItmPort {
    /// The port, taking the ITM peripheral.
    pub fn new(itm: ITM) -> Self {
        ItmPort { itm, errors: 0 }
    }

    /// Frames the port refused (disabled or stalled), since start.
    pub fn errors(&self) -> u32 {
        self.errors
    }

    fn enabled(&self) -> bool {
        self.itm.tcr.read() & TCR_ITMENA != 0 && self.itm.ter[0].read() & 1 != 0
    }

    fn fail(&mut self, error: ItmError) -> ItmError {
        self.errors = self.errors.wrapping_add(1);
        error
    }
}

impl embedded_io::ErrorType for ItmPort {
    type Error = ItmError;
}

impl embedded_io::Write for ItmPort {
    fn write(&mut self, buf: &[u8]) -> Result<usize, ItmError> {
        if !self.enabled() {
            return Err(self.fail(ItmError::Disabled));
        }
        for &byte in buf {
            let mut polls = 0;
            while !self.itm.stim[0].is_fifo_ready() {
                polls += 1;
                if polls == SPIN_LIMIT {
                    // Part of the frame went out: the reader skips it.
                    return Err(self.fail(ItmError::Stalled));
                }
            }
            self.itm.stim[0].write_u8(byte);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), ItmError> {
        Ok(())
    }
}
