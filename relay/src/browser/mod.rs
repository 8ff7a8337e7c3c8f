//! The browser viewer, served: its page ([`page`]: the files of `web/`,
//! embedded) and the route its stream comes by, each behind
//! `typhon-live-http`'s guard. The stream is the merged session live, a
//! tab a viewer like any other ([`tabs`], on the fanout), or a recorded
//! file ([`replay`]). A tab reads no further ahead than a window of bytes
//! ([`in_flight`]); a live tab's frame that waited too long is dropped
//! whole ([`late`]).

mod encoding;
pub mod in_flight;
pub mod late;
pub mod page;
pub mod replay;
pub mod tabs;
