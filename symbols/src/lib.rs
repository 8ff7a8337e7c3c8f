//! Naming a trace's code after the fact (FORMAT.md, "Stacks"): a stream
//! whose sampled stacks lie in a stripped binary, or in firmware, carries
//! their addresses and its module map (each file's bounds, bias and build
//! id); a viewer that holds the files' debug information names them.
//!
//! - [`DebugFiles`]: the ELF files of a directory, by build id, and the
//!   frames at an address of one of them (function, file:line, inlined
//!   calls), read with `addr2line`.
//! - [`symbolize`]: a stream given again with the names found, as frame
//!   symbols the writer could have sent, so that every consumer of the
//!   stream (both viewers, `convert`) reads them alike.
#![deny(missing_docs)]

mod debug_files;
mod error;
mod stream;

pub use debug_files::{DebugFiles, MAX_FILES_LOOKED_AT};
pub use error::SymbolsError;
pub use stream::{symbolize, Symbolized};
