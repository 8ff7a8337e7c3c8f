//! The firmware: a Cortex-M4 main loop and its SysTick interrupt record
//! into static rings, and the main loop pumps the exporter into the link:
//!
//! - feature `mps2-an386`: UART0 of ARM's MPS2 AN386 image, the board QEMU
//!   runs (`qemu-system-arm -M mps2-an386`; see `run-qemu.sh`), through
//!   the transmit queue of `link` (`cmsdk_uart.rs`);
//! - otherwise, or with feature `itm` too: the ITM's stimulus port 0, read
//!   by a debug probe over SWO (`itm.rs`); without `mps2-an386` the board
//!   is an STM32F4-class part.
//!
//! `cd examples/embedded && cargo build --release [--features mps2-an386]`
//! (the target and the linker script come from `.cargo/config.toml` and
//! `build.rs`). Memory is all static or on `main`'s stack; nothing
//! allocates. Only the UART driver has `unsafe`.
#![no_std]
#![no_main]
#![deny(unsafe_code)]

#[cfg(uart_link)]
#[allow(unsafe_code)]
mod cmsdk_uart;
#[cfg(not(uart_link))]
mod itm;

use core::cell::{Cell, RefCell};
use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::{SCB, SYST};
use cortex_m_rt::{entry, exception};
use critical_section::Mutex;
#[cfg(feature = "lz4")]
use typhon_live_core::Lz4Table;
use typhon_live_core::{LaneKind, Lanes};
use typhon_live_embedded::{
    main_loop_pass, on_interrupt, FirmwareLanes, Ids, Lane, LinkGauges, LinkStats, Names,
    Telemetry, OUT_LEN, PASSES_PER_SECOND, SCRATCH_LEN,
};

/// Core clock after reset: the AN386 image's 25 MHz, or the STM32's
/// internal 16 MHz oscillator.
#[cfg(feature = "mps2-an386")]
const CPU_HZ: u32 = 25_000_000;
#[cfg(not(feature = "mps2-an386"))]
const CPU_HZ: u32 = 16_000_000;
/// SysTick reload for a 1 kHz interrupt.
const RELOAD: u32 = CPU_HZ / 1_000 - 1;
/// Milliseconds between two passes of the main loop.
const PASS_MS: u32 = 1_000 / PASSES_PER_SECOND;

static LANES: FirmwareLanes = Lanes::new();
/// Milliseconds since boot, counted by the interrupt.
static MILLIS: AtomicU32 = AtomicU32::new(0);
/// Passes of the main loop: a debugger (or QEMU's monitor, in the test of
/// the ITM build) sees the loop run, or not. Kept (`#[used]`) although
/// the firmware never reads it.
#[used]
static PASSES: AtomicU32 = AtomicU32::new(0);
/// The interrupt's lane and the ids it records with, set up by `main`.
static INTERRUPT: Mutex<RefCell<Option<(Lane<'static>, Ids)>>> = Mutex::new(RefCell::new(None));

/// The latest time [`now_us`] returned.
static LAST_US: Mutex<Cell<u64>> = Mutex::new(Cell::new(0));

/// Microseconds since boot: the milliseconds plus SysTick's progress in
/// the current one, never less than the last time returned.
///
/// Between the counter's wrap and its interrupt (masked, or not yet
/// taken), the counter has started a millisecond that `MILLIS` does not
/// count yet: a time read then went back 1 ms, and a span could end
/// before its children began. A wrap still pending counts its
/// millisecond; where the counter shows the wrap before the interrupt is
/// even pending (an emulator may), the time waits rather than going back.
fn now_us() -> u64 {
    let read = loop {
        let millis = MILLIS.load(Ordering::Acquire);
        let wrapped = SCB::is_pendst_pending();
        let elapsed = RELOAD - SYST::get_current();
        // A wrap or an interrupt between the reads: read again.
        if SCB::is_pendst_pending() == wrapped && MILLIS.load(Ordering::Acquire) == millis {
            let millis = u64::from(millis) + u64::from(wrapped);
            break millis * 1_000 + u64::from(elapsed / (CPU_HZ / 1_000_000));
        }
    };
    critical_section::with(|cs| {
        let last = LAST_US.borrow(cs);
        let now = read.max(last.get());
        last.set(now);
        now
    })
}

#[exception]
fn SysTick() {
    let count = MILLIS.fetch_add(1, Ordering::AcqRel) + 1;
    critical_section::with(|cs| {
        if let Some((lane, ids)) = INTERRUPT.borrow_ref(cs).as_ref() {
            // A stand-in for an ADC reading.
            on_interrupt(
                lane,
                ids,
                count,
                now_us(),
                u64::from(count.wrapping_mul(2654435761) >> 20),
            );
        }
    });
}

/// Stands in for the application's work: about `n` cycles of computation.
fn work(n: u32) {
    for _ in 0..n {
        cortex_m::asm::nop();
    }
}

#[entry]
fn main() -> ! {
    let Some(mut peripherals) = cortex_m::Peripherals::take() else {
        halt();
    };
    let mut names = Names::new();
    let Some(ids) = Ids::intern(&mut names) else {
        halt();
    };
    let (Some(main_lane), Some(interrupt_lane)) = (
        LANES.claim(ids.main, LaneKind::Main),
        LANES.claim(ids.interrupt, LaneKind::Other),
    ) else {
        halt();
    };
    critical_section::with(|cs| INTERRUPT.borrow(cs).replace(Some((interrupt_lane, ids))));

    let syst = &mut peripherals.SYST;
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(RELOAD);
    syst.clear_current();
    syst.enable_counter();
    syst.enable_interrupt();

    #[cfg(uart_link)]
    let Some(mut link) = cmsdk_uart::start() else {
        halt();
    };
    #[cfg(not(uart_link))]
    let mut link = itm::ItmPort::new(peripherals.ITM);

    let mut scratch = [0u8; SCRATCH_LEN];
    let mut out = [0u8; OUT_LEN];
    #[cfg(not(feature = "lz4"))]
    let mut telemetry = Telemetry::new(&mut scratch, &mut out);
    #[cfg(feature = "lz4")]
    let (mut encoding, mut table) = ([0u8; typhon_live_embedded::WORK_LEN], Lz4Table::small());
    #[cfg(feature = "lz4")]
    let mut telemetry = Telemetry::compressed(&mut scratch, &mut out, &mut encoding, &mut table);
    let mut link_gauges = LinkGauges::new();
    let mut pass = 0u64;
    let mut next_pass = 0u32;
    loop {
        if MILLIS.load(Ordering::Acquire).wrapping_sub(next_pass) < u32::MAX / 2 {
            next_pass = next_pass.wrapping_add(PASS_MS);
            main_loop_pass(&main_lane, &ids, pass, &now_us, &mut work);
            let _ = link_gauges.record(&main_lane, &ids, pass, now_us(), stats(&link));
            // A refused frame is counted by the link and reported to the
            // exporter by `pump`; a frame too large for `out` cannot happen
            // with these sizes, and would only delay the telemetry.
            let _ = telemetry.pump(now_us(), &LANES, &names, &mut link);
            #[cfg(uart_link)]
            cmsdk_uart::kick();
            pass += 1;
            PASSES.store(pass as u32, Ordering::Relaxed);
        }
        // Sleep until the next interrupt.
        cortex_m::asm::wfi();
    }
}

#[cfg(uart_link)]
fn stats(link: &typhon_live_embedded::link::FrameQueue<'_>) -> LinkStats {
    LinkStats {
        backlog: link.backlog() as u32,
        refused: link.refused(),
        errors: cmsdk_uart::errors(),
    }
}

#[cfg(not(uart_link))]
fn stats(link: &itm::ItmPort) -> LinkStats {
    LinkStats {
        backlog: 0,
        refused: link.errors(),
        errors: 0,
    }
}

/// Stops here: a fault in set-up.
fn halt() -> ! {
    loop {
        cortex_m::asm::wfi();
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    halt()
}
