#!/usr/bin/env bash
# Boots the firmware on QEMU's model of ARM's MPS2 AN386 board (Cortex-M4)
# with its UART0 served as a TCP server on 127.0.0.1, then watch it with
#
#   typhon-live attach 127.0.0.1:PORT
#   typhon-live record 127.0.0.1:PORT -o fw.tlt
#
# usage: run-qemu.sh [--port PORT] [--lz4] [--itm] [--monitor PORT]
#                    [--build-only | --elf FILE]
#   --port PORT     the UART's TCP port (default 4444)
#   --lz4           the firmware with LZ4 over its Blocks (Compression::Auto)
#   --itm           the firmware writing the ITM instead of the UART (which
#                   no debugger enables under QEMU: it must run on regardless)
#   --monitor PORT  QEMU's monitor on 127.0.0.1:PORT (to read memory: xp)
#   --build-only    build the firmware, print its path and stop
#   --elf FILE      boot FILE instead of building
# Needs qemu-system-arm (Debian: apt-get install qemu-system-arm) and the
# thumbv7em-none-eabihf target (rustup target add thumbv7em-none-eabihf).
set -euo pipefail
cd "$(dirname "$0")"

port=4444
features=mps2-an386
monitor=none
build_only=0
elf=
while [ $# -gt 0 ]; do
    case "$1" in
        --port) port="$2"; shift 2 ;;
        --lz4) features="$features,lz4"; shift ;;
        --itm) features="$features,itm"; shift ;;
        --monitor) monitor="tcp:127.0.0.1:$2,server=on,wait=off"; shift 2 ;;
        --build-only) build_only=1; shift ;;
        --elf) elf="$2"; shift 2 ;;
        *) echo "run-qemu.sh: unknown argument $1 (see the usage at the top of the script)" >&2; exit 2 ;;
    esac
done

if [ -z "$elf" ]; then
    # RUSTFLAGS from the environment would replace the linker-script flag
    # of .cargo/config.toml.
    unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS
    cargo build --release --features "$features" >&2
    elf="${CARGO_TARGET_DIR:-target}/thumbv7em-none-eabihf/release/firmware"
fi
if [ "$build_only" = 1 ]; then
    echo "$(cd "$(dirname "$elf")" && pwd)/$(basename "$elf")"
    exit 0
fi
echo "firmware on mps2-an386: UART0 at 127.0.0.1:$port (typhon-live attach 127.0.0.1:$port)" >&2
# wait=off: the firmware runs whether or not anyone listens; a viewer that
# connects joins the stream wherever it is.
exec qemu-system-arm -M mps2-an386 -nographic -monitor "$monitor" \
    -serial "tcp:127.0.0.1:$port,server=on,wait=off" -kernel "$elf"
