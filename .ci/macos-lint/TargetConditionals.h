/* For the macOS lint only (.ci/run, "portability"): ring's build script
   compiles its C for x86_64-apple-darwin with Debian's clang, and nothing
   is linked, so the SDK headers it includes need only declare. */
#define TARGET_OS_OSX 1
#define TARGET_OS_IPHONE 0
#define TARGET_OS_IOS 0
#define TARGET_OS_SIMULATOR 0
