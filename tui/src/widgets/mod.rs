//! One widget per module, each drawn from borrowed data.

pub mod code;
pub mod log;
pub mod sites;
pub mod span_stats;
pub mod span_table;
pub mod timeline;
