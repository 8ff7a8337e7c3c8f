//! The firmware: a Cortex-M4 main loop and its SysTick interrupt record
//! into static rings; the main loop pumps the exporter into the ITM's
//! stimulus port 0 (a UART-like byte sink: SWO, read by a debug probe).
//!
//! `cd examples/embedded && cargo build --release` (the target and the
//! linker script come from `.cargo/config.toml`). Memory is all static or
//! on `main`'s stack; nothing allocates.
#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use core::cell::RefCell;
use core::convert::Infallible;
use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::{itm::Stim, SYST};
use cortex_m_rt::{entry, exception};
use critical_section::Mutex;
#[cfg(feature = "lz4")]
use typhon_live_core::Lz4Table;
use typhon_live_core::{LaneKind, Lanes};
use typhon_live_embedded::{
    main_loop_pass, on_interrupt, FirmwareLanes, Ids, Lane, Names, Telemetry, OUT_LEN, SCRATCH_LEN,
};

/// Core clock after reset (the internal oscillator).
const CPU_HZ: u32 = 16_000_000;
/// SysTick reload for a 1 kHz interrupt.
const RELOAD: u32 = CPU_HZ / 1_000 - 1;

static LANES: FirmwareLanes = Lanes::new();
/// Milliseconds since boot, counted by the interrupt.
static MILLIS: AtomicU32 = AtomicU32::new(0);
/// The interrupt's lane and the ids it records with, set up by `main`.
static INTERRUPT: Mutex<RefCell<Option<(Lane<'static>, Ids)>>> = Mutex::new(RefCell::new(None));

/// Microseconds since boot: the milliseconds plus SysTick's progress in
/// the current one. Read twice so that a tick between the reads is seen.
fn now_us() -> u64 {
    loop {
        let millis = MILLIS.load(Ordering::Acquire);
        let elapsed = RELOAD - SYST::get_current();
        if MILLIS.load(Ordering::Acquire) == millis {
            return u64::from(millis) * 1_000 + u64::from(elapsed / (CPU_HZ / 1_000_000));
        }
    }
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

/// The ITM stimulus port as an `embedded_io::Write`: blocking, like a UART.
struct Itm<'a>(&'a mut Stim);

impl embedded_io::ErrorType for Itm<'_> {
    type Error = Infallible;
}

impl embedded_io::Write for Itm<'_> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        cortex_m::itm::write_all(self.0, buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
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

    let mut scratch = [0u8; SCRATCH_LEN];
    let mut out = [0u8; OUT_LEN];
    #[cfg(not(feature = "lz4"))]
    let mut telemetry = Telemetry::new(&mut scratch, &mut out);
    #[cfg(feature = "lz4")]
    let (mut encoding, mut table) = ([0u8; typhon_live_embedded::WORK_LEN], Lz4Table::small());
    #[cfg(feature = "lz4")]
    let mut telemetry = Telemetry::compressed(&mut scratch, &mut out, &mut encoding, &mut table);
    let mut itm = Itm(&mut peripherals.ITM.stim[0]);
    let mut pass = 0u64;
    loop {
        main_loop_pass(&main_lane, &ids, pass, &now_us, &mut work);
        // The ITM writer cannot fail; a frame too large for `out` cannot
        // happen with these sizes, and would only delay the telemetry.
        let _ = telemetry.pump(now_us(), &LANES, &names, &mut itm);
        pass += 1;
        // Sleep until the next interrupt.
        cortex_m::asm::wfi();
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
