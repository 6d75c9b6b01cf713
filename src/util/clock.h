/*
 * Internal fast clock: the TSC converted to nanoseconds with a frequency
 * measured once per owner (ctx, blade or tool), since the library keeps no
 * static cache.  See clock.c for how the frequency is found.
 *
 * Invariants:
 *  - After smart__clock_init() succeeds, the struct is read only; any
 *    number of threads may call smart__clock_ns() on it concurrently.
 *  - use_tsc is set only when the TSC is invariant (constant rate, runs in
 *    deep C-states, CPUID 0x80000007 EDX bit 8) and cycles_per_ns > 0.
 *    Otherwise smart__clock_ns() reads clock_gettime(CLOCK_MONOTONIC).
 *  - smart__clock_ns() is on the CLOCK_MONOTONIC time line at base_ns and
 *    then advances at the TSC rate; the two drift apart by at most the
 *    frequency error (typically < 0.1%), so do not mix its values with
 *    smart_now_ns() values in one subtraction.
 *  - Virtual time (util/sim.h): while a simulated fiber runs on this OS
 *    thread, smart__sim_vt points at its clock (ns) and every clock here
 *    reads it instead: mono_ns = vt, rdtsc = vt at a fixed virtual
 *    SMART_SIM_CYCLES_PER_NS.  Everywhere else smart__sim_vt is NULL and
 *    the hook costs one thread-local load and a predicted branch next to
 *    the rdtsc or vDSO call (docs/sim.md: measured in test_sim).
 */
#ifndef SMART_UTIL_CLOCK_H
#define SMART_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define SMART_HAVE_TSC 1
#else
#define SMART_HAVE_TSC 0
#endif

struct smart__clock {
	double cycles_per_ns; /* TSC ticks per ns; 1.0 without a TSC */
	uint64_t base_cycles; /* TSC at base_ns */
	uint64_t base_ns;     /* CLOCK_MONOTONIC at init */
	int use_tsc;	      /* 0: smart__clock_ns() is clock_gettime */
};

/*
 * Measure the TSC frequency and fill *c.  Cheap when the kernel, CPUID or
 * the hypervisor tells the frequency; otherwise it spins about 20 ms.
 * Returns 0, SMART_EINVAL for a NULL c, or SMART_ESYS if clock_gettime
 * fails.  Thread safe (touches only *c).
 */
int smart__clock_init(struct smart__clock *c);

/* The library's one conversion of a clock reading to nanoseconds; every
 * other unit (smart__mono_ms, the deadlines of util/sockio.h) derives from
 * it, so two readings in different units still compare. */
static inline uint64_t smart__ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

/* The virtual-time hook: set only by the sim engine (sim.c), per OS
 * thread; initial-exec so that reading it is one %fs-relative load even
 * in libsmart.so (which is therefore not meant for dlopen). */
extern __thread const uint64_t *smart__sim_vt
	__attribute__((tls_model("initial-exec")));

/* The virtual TSC rate: 2.4 GHz (the paper's Xeon 6240R base clock), as
 * a ratio of integers so that virtual cycles are exact. */
#define SMART_SIM_CYCLES_PER_NS_NUM 12u
#define SMART_SIM_CYCLES_PER_NS_DEN 5u

static inline uint64_t smart__mono_ns(void)
{
	struct timespec ts;
	const uint64_t *vt = smart__sim_vt;

	if (__builtin_expect(vt != NULL, 0))
		return *vt;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return smart__ts_ns(&ts);
}

/* Monotonic milliseconds, for deadlines of control paths. */
static inline uint64_t smart__mono_ms(void)
{
	return smart__mono_ns() / 1000000u;
}

/* Raw cycle counter; nanoseconds where there is no TSC. */
static inline uint64_t smart__rdtsc(void)
{
	const uint64_t *vt = smart__sim_vt;

	if (__builtin_expect(vt != NULL, 0))
		return *vt * SMART_SIM_CYCLES_PER_NS_NUM /
		       SMART_SIM_CYCLES_PER_NS_DEN;
#if SMART_HAVE_TSC
	return __rdtsc();
#else
	return smart__mono_ns();
#endif
}

/* Monotonic nanoseconds: one rdtsc, a subtraction and a division. */
static inline uint64_t smart__clock_ns(const struct smart__clock *c)
{
	uint64_t now;

	if (!c->use_tsc)
		return smart__mono_ns();
	now = smart__rdtsc();
	/* TSCs of different cores may differ by a few cycles: never go
	 * below the base rather than wrap around. */
	if (now < c->base_cycles)
		return c->base_ns;
	return c->base_ns +
	       (uint64_t)((double)(now - c->base_cycles) / c->cycles_per_ns);
}

#endif
