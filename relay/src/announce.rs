//! Where the relay serves, said on stdout one line at a time, as the
//! commands that start it (and the tests) read it.

use std::io::Write;

/// One line on stdout, where the relay serves, said by `who`. Whoever
/// started it may have read the line it wanted and closed the pipe: not
/// an error.
pub(crate) fn tell(who: &str, what: &str) {
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{who}: {what}");
    let _ = out.flush();
}
