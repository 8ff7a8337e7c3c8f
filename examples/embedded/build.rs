//! Puts the board's memory map where cortex-m-rt's `link.x` finds it, as
//! `memory.x`, for the firmware: `memory-mps2-an386.x` with the
//! `mps2-an386` feature, `memory-stm32f4.x` without. (No `memory.x` in this
//! folder: the linker would take it from the working directory first.)

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    // The link: the mps2-an386 board's UART0, unless told to use the ITM
    // (the STM32F4 build has no UART driver).
    println!("cargo::rustc-check-cfg=cfg(uart_link)");
    if env::var_os("CARGO_FEATURE_MPS2_AN386").is_some()
        && env::var_os("CARGO_FEATURE_ITM").is_none()
    {
        println!("cargo:rustc-cfg=uart_link");
    }
    println!("cargo:rerun-if-changed=memory-stm32f4.x");
    println!("cargo:rerun-if-changed=memory-mps2-an386.x");
    if env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("none") {
        return;
    }
    let map: &[u8] = if env::var_os("CARGO_FEATURE_MPS2_AN386").is_some() {
        include_bytes!("memory-mps2-an386.x")
    } else {
        include_bytes!("memory-stm32f4.x")
    };
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::write(out.join("memory.x"), map).expect("write memory.x");
    println!("cargo:rustc-link-search={}", out.display());
}
