//! `typhon-live relay`: many processes in, for the monitoring systems a
//! fleet already runs. It attaches as the viewer of every source
//! ([`source`]), reconnecting for as long as it runs, and serves their
//! metrics to Prometheus ([`metrics`], over [`http`]).

pub mod http;
pub mod metrics;
pub mod source;
