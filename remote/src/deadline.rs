//! A socket whose every read and write must end by a deadline: the
//! handshake's bound holds however the peer trickles its bytes.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Instant;

/// `socket`, timed out at `deadline`.
pub(crate) struct Deadlined<'a> {
    pub socket: &'a TcpStream,
    pub deadline: Instant,
}

impl Deadlined<'_> {
    fn left(&self) -> io::Result<std::time::Duration> {
        self.deadline
            .checked_duration_since(Instant::now())
            .filter(|left| !left.is_zero())
            .ok_or_else(|| io::Error::new(io::ErrorKind::TimedOut, "the handshake's time is up"))
    }
}

impl Read for Deadlined<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.socket.set_read_timeout(Some(self.left()?))?;
        (&mut &*self.socket).read(buf)
    }
}

impl Write for Deadlined<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.socket.set_write_timeout(Some(self.left()?))?;
        (&mut &*self.socket).write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
