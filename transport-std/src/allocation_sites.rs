//! Sampled allocation sites (issue 40): which stacks allocate the bytes
//! the process holds, estimated from one allocation in so many bytes.
//!
//! Allocations are sampled by bytes, not by count: each thread counts
//! down a random number of bytes, drawn from an exponential distribution
//! of mean [`sampling_mean`] (as heapprofd and jemalloc do), and the
//! allocation that crosses zero is sampled. An allocation of `s` bytes is
//! then sampled with probability `1 - exp(-s / mean)`, and stands for `s`
//! over that probability: the estimate is unbiased for large and small
//! allocations alike.
//!
//! A sampled allocation takes its stack's return addresses (a walk of the
//! stack, no allocation, no lock: symbolizing is the exporter's, later),
//! and is kept by address in a bounded table, so that its free is
//! recognized and its site has live bytes, not only allocated ones. A
//! free looks in a 64 KiB filter first: one relaxed load for a block
//! that was not sampled, which is nearly every one.
//!
//! When a table is full, the sample is not taken, and counted as missed:
//! a site never holds bytes whose free could not be seen.

use std::cell::Cell;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard};

use heapless::index_map::FnvIndexMap;
use heapless::Vec as Bounded;
use typhon_live_core::SiteTotals;

/// Sites kept at most: past them, a new stack's samples are missed.
pub const MAX_SITES: usize = 1024;
/// Sampled blocks not yet freed, kept at most (at the default mean, 4
/// GiB of live memory).
pub const MAX_SAMPLED_BLOCKS: usize = 8192;
/// Return addresses taken of a sampled allocation's stack, innermost
/// first: the frames of the profiler itself and the allocator among them
/// (about ten), and a debug build's unoptimized iterators.
pub const MAX_ADDRESSES: usize = 64;
/// The mean interval between two samples, in bytes, unless configured.
pub const DEFAULT_MEAN: u64 = 512 << 10;

/// Mean bytes between two samples; 0 while sampling is off.
static MEAN: AtomicU64 = AtomicU64::new(0);
/// Samples not taken: a table full, or a stack that could not be walked.
static MISSED: AtomicU64 = AtomicU64::new(0);
/// Samples taken.
static SAMPLED: AtomicU64 = AtomicU64::new(0);

/// Sampled blocks by a hash of their address, counted: zero says at once
/// that a block was not sampled.
const FILTER_LEN: usize = 1 << 16;
static FILTER: [AtomicU8; FILTER_LEN] = [const { AtomicU8::new(0) }; FILTER_LEN];

/// Samples allocations once per `mean` bytes on average from now on; 0
/// stops sampling (blocks sampled before are still recognized when
/// freed).
pub fn set_sampling_mean(mean: u64) {
    MEAN.store(mean, Ordering::Relaxed);
}

/// The mean interval between two samples, in bytes; 0 while off.
pub fn sampling_mean() -> u64 {
    MEAN.load(Ordering::Relaxed)
}

/// Samples taken, and samples missed, so far.
pub(crate) fn sample_counts() -> (u64, u64) {
    (
        SAMPLED.load(Ordering::Relaxed),
        MISSED.load(Ordering::Relaxed),
    )
}

/// What a thread keeps to sample: bytes to go, and its random state.
pub(crate) struct Countdown {
    until: Cell<u64>,
    random: Cell<u64>,
}

impl Countdown {
    pub(crate) const fn new() -> Countdown {
        Countdown {
            until: Cell::new(0),
            random: Cell::new(0),
        }
    }

    /// Never samples again: the countdown at its end, and its sequence
    /// drawn.
    pub(crate) fn stop(&self) {
        self.until.set(u64::MAX);
        self.random.set(1);
    }

    /// Counts `size` bytes allocated: whether this allocation is sampled.
    #[inline]
    pub(crate) fn allocated(&self, size: usize) -> bool {
        let until = self.until.get();
        if (size as u64) < until {
            self.until.set(until - size as u64);
            return false;
        }
        self.crossed()
    }

    /// The countdown reached zero: a new one is drawn, and the allocation
    /// that reached it is sampled, unless sampling is off or the thread
    /// had not drawn one yet.
    #[cold]
    fn crossed(&self) -> bool {
        let mean = sampling_mean();
        if mean == 0 {
            // Off: look again after a while, to see it turned on.
            self.until.set(DEFAULT_MEAN);
            return false;
        }
        let first = self.random.get() == 0;
        if first {
            // Each thread its own sequence: its thread-local's address and
            // a process-wide count, mixed.
            static THREADS: AtomicU64 = AtomicU64::new(0);
            let seed = (self as *const Countdown as u64)
                ^ THREADS
                    .fetch_add(1, Ordering::Relaxed)
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15);
            self.random.set(seed | 1);
        }
        self.until.set(self.draw(mean));
        !first
    }

    /// Bytes to the next sample: exponential, of mean `mean`.
    fn draw(&self, mean: u64) -> u64 {
        // xorshift64*: well spread, and no allocation.
        let mut x = self.random.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.random.set(x);
        let bits = x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
        // In (0, 1]: never the log of 0.
        let uniform = (bits as f64 + 1.0) / (1u64 << 53) as f64;
        let draw = -uniform.ln() * mean as f64;
        (draw as u64).clamp(1, mean.saturating_mul(64))
    }
}

/// The bytes a sampled allocation of `size` bytes stands for: its size
/// over the chance that it was sampled.
pub(crate) fn weight(size: usize, mean: u64) -> u64 {
    let (size, mean) = (size as f64, mean.max(1) as f64);
    (size / -(-size / mean).exp_m1()).round() as u64
}

/// A site: its stack, and its totals.
struct Site {
    addresses: Bounded<usize, MAX_ADDRESSES>,
    totals: SiteTotals,
    /// Its totals moved since the exporter last took them.
    changed: bool,
}

/// A sampled block not yet freed: its site, and the bytes it stands for.
#[derive(Clone, Copy)]
struct Sampled {
    site: u16,
    weight: u64,
}

/// Hashes a stack's addresses: std's, with its fixed keys (no
/// allocation, no randomness to fetch).
type StackHasher = BuildHasherDefault<DefaultHasher>;

struct Table {
    sites: Bounded<Site, MAX_SITES>,
    /// Sites by a hash of their stack.
    by_stack: FnvIndexMap<u64, u16, MAX_SITES>,
    blocks: FnvIndexMap<usize, Sampled, MAX_SAMPLED_BLOCKS>,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    sites: Bounded::new(),
    by_stack: FnvIndexMap::new(),
    blocks: FnvIndexMap::new(),
});

fn table() -> MutexGuard<'static, Table> {
    // Nothing under the lock panics; a poisoned lock is the test
    // harness's, and its table is whole.
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

fn filter_slot(address: usize) -> &'static AtomicU8 {
    // Blocks are aligned: the low bits say little.
    let mixed = (address >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as usize);
    &FILTER[(mixed >> (usize::BITS - 16)) % FILTER_LEN]
}

/// Records a sampled allocation of `size` bytes at `address`, its stack
/// walked from here. The caller has made sure the thread does not sample
/// again meanwhile (its allocations here are only counted).
pub(crate) fn sampled(address: usize, size: usize) {
    let mean = sampling_mean();
    if mean == 0 {
        return;
    }
    let mut addresses = Bounded::<usize, MAX_ADDRESSES>::new();
    stack::walk(|ip| addresses.push(ip).is_ok());
    if addresses.is_empty() {
        MISSED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let hash = StackHasher::default().hash_one(addresses.as_slice());
    let weight = weight(size, mean);
    let mut table = table();
    // A block at this address was sampled and its free not seen (it
    // happened in a signal handler while this thread sampled): it is
    // freed now, or its bytes would be a phantom leak.
    table.forget(address);
    if table.blocks.len() == MAX_SAMPLED_BLOCKS {
        drop(table);
        MISSED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let site = match table.by_stack.get(&hash) {
        Some(&site) => site,
        None => {
            let site = table.sites.len() as u16;
            let new = Site {
                addresses,
                totals: SiteTotals::default(),
                changed: true,
            };
            if table.sites.push(new).is_err() {
                drop(table);
                MISSED.fetch_add(1, Ordering::Relaxed);
                return;
            }
            // As many entries as sites: it has room.
            let _ = table.by_stack.insert(hash, site);
            site
        }
    };
    let _ = table.blocks.insert(address, Sampled { site, weight });
    filter_slot(address).fetch_add(1, Ordering::Relaxed);
    let entry = &mut table.sites[usize::from(site)];
    entry.totals.allocated += weight;
    entry.totals.allocations += 1;
    entry.changed = true;
    drop(table);
    SAMPLED.fetch_add(1, Ordering::Relaxed);
}

/// Whether the block at `address` may have been sampled: when not, as
/// for nearly every block, a free need not look further.
#[inline]
pub(crate) fn may_be_sampled(address: usize) -> bool {
    filter_slot(address).load(Ordering::Relaxed) != 0
}

/// The block at `address` is freed: if it was sampled, its site's bytes
/// are freed by what it stood for.
#[cold]
pub(crate) fn freed(address: usize) {
    table().forget(address);
}

impl Table {
    /// The sampled block at `address`, if any, is freed.
    fn forget(&mut self, address: usize) {
        let Some(block) = self.blocks.swap_remove(&address) else {
            return;
        };
        filter_slot(address).fetch_sub(1, Ordering::Relaxed);
        let site = &mut self.sites[usize::from(block.site)];
        site.totals.freed += block.weight;
        site.totals.frees += 1;
        site.changed = true;
    }
}

/// A site as the exporter takes it.
pub(crate) struct SiteCopy {
    /// Its index: the site id on the wire.
    pub(crate) site: u32,
    pub(crate) addresses: Bounded<usize, MAX_ADDRESSES>,
    pub(crate) totals: SiteTotals,
}

/// Copies into `out` (whose capacity the caller reserved: nothing here
/// allocates under the lock) the sites whose totals moved since the last
/// call, or every site if `all`.
pub(crate) fn take_sites(all: bool, out: &mut Vec<SiteCopy>) {
    out.clear();
    let mut table = table();
    for (index, site) in table.sites.iter_mut().enumerate() {
        if (all || site.changed) && out.len() < out.capacity() {
            site.changed = false;
            out.push(SiteCopy {
                site: index as u32,
                addresses: site.addresses.clone(),
                totals: site.totals,
            });
        }
    }
}

/// Walking a stack without allocating and without a lock.
mod stack {
    /// Calls `each` with each return address, innermost first, until it
    /// answers false.
    pub(super) fn walk(mut each: impl FnMut(usize) -> bool) {
        let mut frame = |frame: &backtrace::Frame| each(frame.ip() as usize);
        #[cfg(any(
            all(windows, target_env = "msvc"),
            all(
                windows,
                target_env = "gnu",
                any(target_arch = "x86", target_arch = "arm")
            )
        ))]
        // dbghelp is not thread-safe: the crate's lock serializes it.
        backtrace::trace(&mut frame);
        #[cfg(not(any(
            all(windows, target_env = "msvc"),
            all(
                windows,
                target_env = "gnu",
                any(target_arch = "x86", target_arch = "arm")
            )
        )))]
        // SAFETY: the unwinder here (libunwind's `_Unwind_Backtrace`, or
        // `RtlVirtualUnwind` on 64-bit Windows GNU) is thread-safe; the
        // crate's lock is needed only for dbghelp, excluded above. Taking
        // that lock would make a thread that samples wait while the
        // exporter symbolizes under it, which can take a second the first
        // time. The callback neither panics nor allocates.
        unsafe {
            backtrace::trace_unsynchronized(&mut frame)
        };
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn the_weight_is_the_size_over_its_chance_of_being_sampled() {
        let mean = 512 << 10;
        // A small block is sampled rarely and stands for about the mean.
        let small = weight(64, mean);
        assert!((mean..mean + 64).contains(&small), "{small}");
        // A block much larger than the mean is nearly always sampled, and
        // stands for about itself.
        let huge = 64 << 20;
        assert_eq!(weight(huge, mean), huge as u64);
    }

    #[test]
    fn countdowns_are_exponential_of_the_mean() {
        let countdown = Countdown::new();
        countdown.random.set(0x1234_5678_9abc_def1);
        let mean = 1000u64;
        let draws: Vec<u64> = (0..100_000).map(|_| countdown.draw(mean)).collect();
        let average = draws.iter().sum::<u64>() as f64 / draws.len() as f64;
        assert!((average / mean as f64 - 1.0).abs() < 0.02, "{average}");
        // Exponential: about e^-1 of the draws above the mean.
        let above = draws.iter().filter(|&&d| d > mean).count() as f64 / draws.len() as f64;
        assert!((above - (-1.0f64).exp()).abs() < 0.01, "{above}");
    }

    #[test]
    fn a_stack_is_walked_from_here() {
        let mut addresses = std::vec::Vec::new();
        stack::walk(|ip| {
            addresses.push(ip);
            addresses.len() < MAX_ADDRESSES
        });
        assert!(addresses.len() >= 3, "{addresses:?}");
        assert!(names_at(&addresses).contains("a_stack_is_walked_from_here"));
    }

    /// The frames' names at `addresses`, on one line.
    pub(crate) fn names_at(addresses: &[usize]) -> String {
        let mut names = String::new();
        for &ip in addresses {
            backtrace::resolve(ip.saturating_sub(1) as *mut _, |symbol| {
                if let Some(name) = symbol.name() {
                    names.push_str(&format!("{name:#} "));
                }
            });
        }
        names
    }
}
