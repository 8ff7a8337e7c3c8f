//! One module per subcommand: its options, and the loop that runs it.

pub mod attach;
pub mod capture;
pub mod check;
pub mod compare;
pub mod convert;
pub mod demo;
pub mod inspect;
pub mod record;
pub mod relay;
pub mod remote;
pub mod verdict;
pub mod view;
pub mod web;
