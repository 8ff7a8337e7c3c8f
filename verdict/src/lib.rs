//! Did a change make it slower? Two sides' traces compared name by name
//! with a rank test and a bootstrap, and budgets checked, for CI.
//!
//! - [`samples`]: a side's spans, task spans and ticks as samples, read
//!   from trace files or a live stream through the one reader, each in
//!   its tick and run;
//! - [`stats`]: quantiles, the Mann–Whitney test, Holm's correction and
//!   the bootstrap over runs, then ticks;
//! - [`compare`]: two sides, name by name: the verdict;
//! - [`check`]: budget assertions (typhon-live-condition's grammar);
//! - [`report`]: either verdict as a terminal table, Markdown or JUnit
//!   XML (JSON is their serde form).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod check;
pub mod compare;
pub mod report;
pub mod samples;
pub mod stats;
