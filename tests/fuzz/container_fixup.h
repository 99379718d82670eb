/* Repair the checksums of a (mutated) squint container in place, so that a
 * fuzzer's byte flips reach the structure checks and the kind-specific
 * parsers behind them instead of stopping at the first xxh64 mismatch.
 * Only checksum fields (and file_size) are rewritten; every other byte is
 * left as the fuzzer made it. Fields are read with bounds checks: ranges
 * outside the buffer are skipped, never trusted. */
#ifndef SQ_FUZZ_CONTAINER_FIXUP_H
#define SQ_FUZZ_CONTAINER_FIXUP_H

#include <stddef.h>
#include <stdint.h>

/* Returns 1 when buf looked like a container (magic, >= 144 bytes) and was
 * repaired, 0 when it was left alone. */
int container_fixup(uint8_t *buf, size_t n);

/* A malloc'd copy of data[0 .. n) with its checksums repaired (the fuzzer's
 * input itself is read-only); aborts when out of memory. */
uint8_t *container_fixed_copy(const uint8_t *data, size_t n);

#endif
