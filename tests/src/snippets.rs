//! The Rust snippets of README.md and docs/, compiled (and run, unless
//! marked `no_run`) as this crate's doc tests, so that a snippet that no
//! longer builds fails `cargo test`. `tests/tests/docs.rs` checks that
//! every page with a Rust snippet is included here.

/// README.md.
#[doc = include_str!("../../README.md")]
pub struct Readme;

/// docs/EXPORTER.md.
#[doc = include_str!("../../docs/EXPORTER.md")]
pub struct Exporter;

/// docs/EMBEDDED.md.
#[doc = include_str!("../../docs/EMBEDDED.md")]
pub struct Embedded;
