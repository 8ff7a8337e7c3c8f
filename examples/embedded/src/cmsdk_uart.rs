//! UART0 of the MPS2 AN386 image: an ARM CMSDK APB UART (ARM DDI0479C,
//! section 4.3) at `0x4000_4000`, transmit only, fed from the link's
//! queue by its transmit interrupt. QEMU's `mps2-an386` models this UART
//! and connects it to its first `-serial` backend.
//!
//! We found no maintained PAC or HAL for the MPS2 images, so this is a
//! register driver of its own, and the only module of the firmware with
//! `unsafe`: the volatile register read and write (one helper each), the
//! interrupt line's number, its unmask, and the default handler that
//! catches the UART's interrupt (a board without a PAC has no named
//! interrupt vectors). Each says why it holds.
//!
//! The UART has a one-byte transmit buffer and raises its transmit
//! interrupt each time the buffer empties. The handler moves at most
//! [`BYTES_PER_INTERRUPT`] bytes per entry, so the SysTick interrupt is
//! never held off for long even where a byte leaves at once (QEMU).

use core::cell::RefCell;
use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::interrupt::InterruptNumber;
use cortex_m::peripheral::NVIC;
use cortex_m_rt::exception;
use critical_section::Mutex;
use heapless::spsc::Consumer;
use typhon_live_embedded::link::{drain, FrameQueue, LinkQueue};

/// UART0's registers.
const UART0: usize = 0x4000_4000;
const DATA: usize = 0x000;
const STATE: usize = 0x004;
const CTRL: usize = 0x008;
const INTSTATUS: usize = 0x00C;
const BAUDDIV: usize = 0x010;

/// STATE: the transmit buffer holds a byte; a byte was written while it did.
const STATE_TX_FULL: u32 = 1 << 0;
const STATE_TX_OVERRUN: u32 = 1 << 2;
/// CTRL: transmitter on; its interrupt on.
const CTRL_TX_ENABLE: u32 = 1 << 0;
const CTRL_TX_INTERRUPT: u32 = 1 << 2;
/// INTSTATUS: the transmit interrupt (write 1 to clear).
const INT_TX: u32 = 1 << 0;

/// The APB clock of the AN386 image (25 MHz), which BAUDDIV divides.
const PCLK_HZ: u32 = 25_000_000;
/// The line rate.
pub const BAUD: u32 = 115_200;
/// Bytes moved per interrupt at most: the size of a small hardware FIFO.
const BYTES_PER_INTERRUPT: usize = 16;

/// UART0's transmit interrupt: NVIC line 1 on the AN385/AN386 images
/// (receive is 0).
#[derive(Clone, Copy)]
struct TransmitInterrupt;

// SAFETY: `number` returns 1, a valid interrupt line of this board (it
// has 32), which is all `InterruptNumber` asks.
unsafe impl InterruptNumber for TransmitInterrupt {
    fn number(self) -> u16 {
        1
    }
}

/// The queue's consumer half, for the interrupt handler.
static CONSUMER: Mutex<RefCell<Option<Consumer<'static, u8>>>> = Mutex::new(RefCell::new(None));
/// Transmit overruns seen, since start.
static ERRORS: AtomicU32 = AtomicU32::new(0);

fn read(register: usize) -> u32 {
    // SAFETY: UART0 is at `UART0` on this board and `register` is one of
    // its word-aligned register offsets above; no Rust object lives in
    // that range, and reading STATE (the only register read) has no side
    // effect.
    unsafe { core::ptr::read_volatile((UART0 + register) as *const u32) }
}

fn write(register: usize, value: u32) {
    // SAFETY: as in `read`; writes configure or feed this UART only, and
    // nothing else in the firmware maps its registers.
    unsafe { core::ptr::write_volatile((UART0 + register) as *mut u32, value) }
}

/// Sets the UART up for [`BAUD`], 8N1, and returns the writer the main
/// loop pumps frames into; `None` if called twice.
pub fn start() -> Option<FrameQueue<'static>> {
    let queue: &'static mut LinkQueue = cortex_m::singleton!(: LinkQueue = LinkQueue::new())?;
    let (producer, consumer) = queue.split();
    critical_section::with(|cs| CONSUMER.borrow(cs).replace(Some(consumer)));
    write(BAUDDIV, PCLK_HZ / BAUD);
    write(CTRL, CTRL_TX_ENABLE | CTRL_TX_INTERRUPT);
    // SAFETY: unmasking can break a critical section that relies on this
    // interrupt being masked; none does (the handler's state is behind a
    // `critical_section::Mutex`, which masks all interrupts).
    unsafe { NVIC::unmask(TransmitInterrupt) };
    Some(FrameQueue::new(producer))
}

/// Starts sending what the main loop queued, if the UART is idle: the
/// interrupt only fires when a byte leaves, so the first one needs a push.
pub fn kick() {
    NVIC::pend(TransmitInterrupt);
}

/// The UART's write errors (transmit overruns) since start.
pub fn errors() -> u32 {
    ERRORS.load(Ordering::Relaxed)
}

fn on_transmit() {
    // Acknowledged first: a byte that leaves after this raises it again.
    write(INTSTATUS, INT_TX);
    if read(STATE) & STATE_TX_OVERRUN != 0 {
        // A byte was written over a full buffer and is lost: the frame it
        // belonged to is damaged, and the reader resyncs past it.
        ERRORS.fetch_add(1, Ordering::Relaxed);
        write(STATE, STATE_TX_OVERRUN);
    }
    critical_section::with(|cs| {
        if let Some(consumer) = CONSUMER.borrow_ref_mut(cs).as_mut() {
            drain(
                consumer,
                BYTES_PER_INTERRUPT,
                || read(STATE) & STATE_TX_FULL == 0,
                |byte| write(DATA, u32::from(byte)),
            );
        }
    });
}

// SAFETY: cortex-m-rt makes defining the default handler unsafe because it
// runs for every exception and interrupt without a handler of its own.
// This one serves the UART's transmit interrupt, which touches only the
// UART and the queue's consumer; anything else stops the core, as the
// default handler does.
#[exception]
unsafe fn DefaultHandler(irqn: i16) {
    if irqn == 1 {
        on_transmit();
    } else {
        loop {
            cortex_m::asm::wfi();
        }
    }
}
