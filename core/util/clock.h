/*
 * clock.h - the core's one clock for durations and deadlines.
 */
#ifndef STRATA_UTIL_CLOCK_H
#define STRATA_UTIL_CLOCK_H

#include <stdint.h>

/* Nanoseconds of CLOCK_MONOTONIC: never steps with the wall clock. */
uint64_t strata_now_ns(void);

#endif
