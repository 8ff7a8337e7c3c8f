//! One widget per module, each drawn from borrowed data.

pub mod timeline;
