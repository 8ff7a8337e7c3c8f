/*
 * A stand-in for Windows' bcryptprimitives.dll, for running our Windows
 * test binaries under Debian's Wine 8.0 in CI (.ci/run).
 *
 * Why: Rust's std (since 1.78) takes its random seeds from ProcessPrng in
 * bcryptprimitives.dll, which Wine 8.0 does not have, so every Rust
 * binary fails to load under it ("bcryptprimitives.dll not found", exit
 * status 53). Windows itself has the DLL; nothing here ships to users.
 *
 * It exports ProcessPrng and fills the buffer from RtlGenRandom
 * (advapi32's SystemFunction036), which Wine does implement.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
