/* The macOS lint's stand-in: see TargetConditionals.h. */
#define assert(e) ((void)0)
