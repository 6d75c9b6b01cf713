/** @file
 * Utilities that tools and applications share with the library: a
 * calibrated clock, a fast RNG, a Zipf generator and a latency histogram.
 *
 * Thread safety: the clock is thread safe; an RNG, Zipf generator or
 * histogram object belongs to one thread (merge histograms afterwards).
 */
#ifndef SMART_UTIL_H
#define SMART_UTIL_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Monotonic time in nanoseconds (clock_gettime(CLOCK_MONOTONIC)).  The
 * clock's calls return values and cannot fail (docs/api.md §2).  Thread:
 * any. */
uint64_t smart_now_ns(void);
/** Raw cycle counter and its calibrated frequency (cycles per second).
 * smart_cycles_per_sec() may take ~20 ms when it has to calibrate: call it
 * once and keep the value. */
uint64_t smart_cycles(void);
double smart_cycles_per_sec(void);

/** xoshiro256** style 64-bit generator; never seeded from the clock.
 * Values, no failure (docs/api.md §2).  Thread: the generator's owner. */
typedef struct smart_rng {
	uint64_t s[4];
} smart_rng_t;
void smart_rng_seed(smart_rng_t *r, uint64_t seed);
uint64_t smart_rng_next(smart_rng_t *r);
/** Uniform in [0, n), n > 0, without modulo bias worth noting (Lemire). */
uint64_t smart_rng_below(smart_rng_t *r, uint64_t n);
/** Uniform double in [0, 1). */
double smart_rng_double(smart_rng_t *r);

/** Zipf over [0, n) with parameter theta in [0, 1) (Gray et al. 1994 as in
 * YCSB); item 0 is the most popular unless scrambled by the caller.  init:
 * SMART_EINVAL for NULL z, n 0 or theta out of range.  Thread: the
 * generator's owner (next reads z only). */
typedef struct smart_zipf {
	uint64_t n;
	double theta, alpha, zetan, eta, half_pow;
} smart_zipf_t;
int smart_zipf_init(smart_zipf_t *z, uint64_t n, double theta);
uint64_t smart_zipf_next(const smart_zipf_t *z, smart_rng_t *r);

/** Latency histogram of nanosecond values: log2 buckets with 32 linear
 * sub-buckets each (relative error < 3.2%), from 1 ns to ~584 years.
 * Values, no failure (docs/api.md §2).  Thread: the histogram's owner
 * (merge them afterwards). */
#define SMART_HIST_SUB	   32
#define SMART_HIST_BUCKETS (64 * SMART_HIST_SUB)
typedef struct smart_hist {
	uint64_t count, sum, min, max;
	uint64_t b[SMART_HIST_BUCKETS];
} smart_hist_t;
void smart_hist_init(smart_hist_t *h);
void smart_hist_add(smart_hist_t *h, uint64_t ns);
void smart_hist_merge(smart_hist_t *dst, const smart_hist_t *src);
/** Value at quantile q in [0, 1] (e.g. 0.99); 0 for an empty histogram. */
double smart_hist_quantile(const smart_hist_t *h, double q);
double smart_hist_mean(const smart_hist_t *h);

/** 64-bit hash of a byte string (seeded).  Pure: thread any. */
uint64_t smart_hash64(const void *data, size_t len, uint64_t seed);
/** CRC-32C (Castagnoli) of a byte string, continuing from crc (start 0).
 * Pure: thread any. */
uint32_t smart_crc32c(uint32_t crc, const void *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif
