//! From a sample the kernel wrote to the addresses of its stack
//! (FORMAT.md, "Stacks"), on the exporter thread, never on the sampled
//! one.
//!
//! A sample with a copy of the thread's stack is walked with the unwind
//! tables (DWARF CFI, `.eh_frame`) of the modules the process has loaded,
//! by framehop: what users' release builds need, since they keep no
//! frame pointers (framehop falls back to them where a module has no
//! tables). A sample without one (copies off, or refused) is the kernel's
//! frame-pointer chain, whole only where every frame keeps its pointer.
//!
//! Every address handed out lies inside its instruction: the sampled one
//! for the innermost frame, the call for every other (its return address
//! less one), so that one symbol answers for an address wherever it
//! stands in a stack.

use typhon_live_core::stacks::{Unwinding, MAX_STACK_DEPTH};

use crate::stack_samples::{RawStack, MAX_CHAIN};

/// Walks samples into addresses.
#[derive(Default)]
pub(crate) struct Unwinder {
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    tables: tables::Tables,
}

impl Unwinder {
    /// The addresses of `raw`'s stack into `out`, innermost first (at most
    /// [`MAX_STACK_DEPTH`]); how they were found, and whether outer frames
    /// are missing.
    pub(crate) fn walk(&mut self, raw: &RawStack<'_>, out: &mut Vec<u64>) -> (Unwinding, bool) {
        out.clear();
        #[cfg(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        if let Some(registers) = raw.registers.filter(|_| !raw.stack.is_empty()) {
            let whole = self.tables.walk(registers, raw.stack, out);
            // Where the tables' walk stopped short of the kernel's chain
            // (an address no module covers), the chain says more.
            if whole || out.len() >= raw.chain.len().min(MAX_STACK_DEPTH) {
                return (Unwinding::UnwindTables, !whole);
            }
            out.clear();
        }
        let chain = raw.chain;
        for (i, &address) in chain.iter().take(MAX_STACK_DEPTH).enumerate() {
            out.push(if i == 0 {
                address
            } else {
                address.saturating_sub(1)
            });
        }
        let cut = chain.len() > MAX_STACK_DEPTH || chain.len() >= usize::from(MAX_CHAIN);
        (Unwinding::FramePointers, cut)
    }
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod tables {
    use framehop::{ExplicitModuleSectionInfo, FrameAddress, Unwinder as _};
    use typhon_live_core::stacks::MAX_STACK_DEPTH;

    #[cfg(target_arch = "aarch64")]
    use framehop::aarch64::{
        CacheAarch64 as Cache, UnwindRegsAarch64 as Regs, UnwinderAarch64 as Native,
    };
    #[cfg(target_arch = "x86_64")]
    use framehop::x86_64::{
        CacheX86_64 as Cache, UnwindRegsX86_64 as Regs, UnwinderX86_64 as Native,
    };

    use crate::modules::ModuleMap;
    use crate::stack_samples::Registers;

    pub(super) struct Tables {
        native: Native<Vec<u8>>,
        cache: Cache,
        map: ModuleMap,
        /// The map's modules handed to framehop: its first ones.
        added: usize,
    }

    impl Default for Tables {
        fn default() -> Self {
            Tables {
                native: Native::new(),
                cache: Cache::new(),
                map: ModuleMap::default(),
                added: 0,
            }
        }
    }

    impl Tables {
        /// Walks the copied stack; whether the walk found the stack's end.
        pub(super) fn walk(&mut self, at: Registers, stack: &[u8], out: &mut Vec<u64>) -> bool {
            if !self.map.covers(at.ip) {
                // The modules' tables (MBs, kept for good) are the
                // profiler's, no allocation site of the program's.
                crate::tracking::unsampled(|| self.rescan());
            }
            #[cfg(target_arch = "x86_64")]
            let regs = Regs::new(at.ip, at.sp, at.fp);
            #[cfg(target_arch = "aarch64")]
            let regs = Regs::new(at.lr, at.sp, at.fp);
            let sp = at.sp;
            // Reads of the copy only: an address outside it is an error,
            // never a read of this process's memory.
            let mut read_stack = |address: u64| -> Result<u64, ()> {
                let from = usize::try_from(address.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
                let bytes = stack.get(from..from.checked_add(8).ok_or(())?).ok_or(())?;
                Ok(u64::from_ne_bytes(bytes.try_into().map_err(|_| ())?))
            };
            let mut frames = self
                .native
                .iter_frames(at.ip, regs, &mut self.cache, &mut read_stack);
            loop {
                match frames.next() {
                    Ok(Some(_)) if out.len() >= MAX_STACK_DEPTH => return false,
                    Ok(Some(FrameAddress::InstructionPointer(ip))) => out.push(ip),
                    Ok(Some(FrameAddress::ReturnAddress(ra))) => out.push(ra.get() - 1),
                    Ok(None) => return true,
                    Err(_) => return false,
                }
            }
        }

        fn rescan(&mut self) {
            if !self.map.rescan() {
                return;
            }
            for module in &self.map.modules()[self.added..] {
                let tables = module.unwind_tables();
                let info = ExplicitModuleSectionInfo {
                    base_svma: 0,
                    text_svma: tables.text_svma,
                    eh_frame_svma: tables.eh_frame_svma,
                    eh_frame: tables.eh_frame,
                    eh_frame_hdr_svma: tables.eh_frame_hdr_svma,
                    eh_frame_hdr: tables.eh_frame_hdr,
                    ..Default::default()
                };
                self.native.add_module(framehop::Module::new(
                    module.path.clone(),
                    module.avma.clone(),
                    module.bias,
                    info,
                ));
            }
            self.added = self.map.modules().len();
        }
    }
}
