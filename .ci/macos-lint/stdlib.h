/* The macOS lint's stand-in: see TargetConditionals.h. */
#include <stddef.h>
