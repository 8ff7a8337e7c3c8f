//! typhon-live's HTTP server: what the relay serves to browsers and
//! scrapers (`/metrics`, the browser viewer), as an [`axum`]
//! router on hyper's HTTP/1.1, run on a tokio runtime of its own thread.
//!
//! What hyper and tower-http give each connection, with the bounds of
//! [`Limits`]: a request head read within a deadline and capped in size
//! (a larger one gets 431), and a request body capped in size (413) and
//! read within a deadline. What this crate adds on top, because a server
//! facing the open network needs it and hyper leaves it to its user:
//!
//! - **A connection table.** At most [`Limits::max_connections`] are held
//!   at once. When it is full, a new connection evicts the one that has
//!   moved no byte, either way, for longest: a client sending
//!   one byte a second or never reading its answer goes before one that
//!   is being served.
//! - **An idle deadline.** A connection on which no byte moved either way
//!   for [`Limits::idle_timeout`] is closed: a client that never reads a
//!   large answer, or keeps a connection open between requests, cannot
//!   hold its slot for ever.
//! - **Enough file descriptors** for the table, asked of the system at
//!   start.
//!
//! A page served on this machine is protected by a [`guard::Guard`]: a
//! token in every path, the `Host` and `Origin` headers checked, and a
//! strict Content-Security-Policy. [`serve`] speaks HTTPS when given a
//! TLS server (rustls); [`bearer`] asks for a token in `Authorization`.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod bearer;
pub mod guard;
mod limits;
mod server;
mod table;
mod watched;

pub use axum;
pub use guard::Guard;
pub use limits::Limits;
pub use server::serve;
