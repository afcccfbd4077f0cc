// Counts heap allocations of the whole process by defining malloc and friends in the
// executable, which takes precedence over libc's for every library (ELF symbol interposition),
// and forwarding to glibc's __libc_* entry points. No LD_PRELOAD needed.
#ifndef ALLOCATION_COUNTER_H
#define ALLOCATION_COUNTER_H
#include <stdint.h>

/// Allocations (malloc, calloc, realloc of NULL, aligned allocations) since the process began.
uint64_t allocation_count(void);
#endif
