//! Where frames come from: a live connection or a trace file. Both hand
//! whole frames, and the damage between them, to their consumer.

pub mod file;
pub mod live;
