//! One widget per module, each drawn from borrowed data.

pub mod span_stats;
pub mod span_table;
pub mod timeline;
