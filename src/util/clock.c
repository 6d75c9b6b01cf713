/*
 * Clocks: the public smart_now_ns()/smart_cycles()/smart_cycles_per_sec()
 * and the internal struct smart__clock (clock.h) that converts TSC ticks to
 * nanoseconds on hot paths.
 *
 * There is no mutable static state, so nothing caches the TSC frequency:
 * each owner (ctx, blade, tool) calls smart__clock_init() once and keeps
 * the result.  The frequency comes from the first source that has it:
 *  1. /sys/devices/system/cpu/cpu0/tsc_freq_khz (exported by some kernels);
 *  2. the hypervisor timing leaf CPUID 0x40000010 EAX (TSC kHz; VMware,
 *     and KVM when QEMU runs with vmware-cpuid-freq=on);
 *  3. CPUID 0x15 (crystal Hz * EBX / EAX, Intel since Skylake);
 *  4. CPUID 0x16 EAX (nominal base MHz; Intel, can be off by ~0.5%);
 *  5. a measurement: (TSC, CLOCK_MONOTONIC_RAW) pairs about 20 ms apart.
 *     RAW is not slewed by NTP, so the rate it gives is the oscillator's.
 *     Each pair is the best of a few tries (the one whose two bracketing
 *     TSC reads are closest), so a preemption cannot skew it much.
 * Values outside 100 MHz .. 20 GHz are treated as absent.
 *
 * The TSC is used only when it is invariant (CPUID 0x80000007 EDX bit 8:
 * constant rate across P- and C-states); otherwise use_tsc is 0 and
 * smart__clock_ns() falls back to clock_gettime(CLOCK_MONOTONIC).  The
 * frequency is still measured so that smart_cycles_per_sec() means
 * something.  Without a TSC (non-x86), "cycles" are nanoseconds.
 *
 * Public functions: smart_now_ns() is clock_gettime(CLOCK_MONOTONIC)
 * (about 20 ns through the vDSO, needs no calibration); smart_cycles() is
 * a raw rdtsc; smart_cycles_per_sec() runs smart__clock_init() each time,
 * which may take ~20 ms: call it once and keep the value.
 */
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "smart/status.h"
#include "smart/util.h"

#if SMART_HAVE_TSC
#include <cpuid.h>
#endif

#define FREQ_MIN_HZ  1e8
#define FREQ_MAX_HZ  2e10
#define CALIB_NS     20000000ull
#define SAMPLE_TRIES 7

#if SMART_HAVE_TSC
static double freq_checked(double hz)
{
	return hz >= FREQ_MIN_HZ && hz <= FREQ_MAX_HZ ? hz : 0;
}

/* Source 1: a small sysfs file holding the frequency in kHz. */
static double freq_from_sysfs(void)
{
	char buf[32];
	ssize_t n;
	char *end;
	unsigned long long khz;
	int fd;

	fd = open("/sys/devices/system/cpu/cpu0/tsc_freq_khz",
		  O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	do {
		n = read(fd, buf, sizeof(buf) - 1);
	} while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	errno = 0;
	khz = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return 0;
	return freq_checked((double)khz * 1e3);
}

static int tsc_invariant(void)
{
	unsigned int a, b, c, d;

	if ((unsigned int)__get_cpuid_max(0x80000000, NULL) < 0x80000007)
		return 0;
	__cpuid(0x80000007, a, b, c, d);
	return (d >> 8) & 1;
}

/*
 * Source 2: the timing leaf 0x40000010, which only VMware and KVM define
 * (other hypervisors use that leaf number for something else, so check
 * the vendor signature first).
 */
static double freq_from_hypervisor(void)
{
	unsigned int a, b, c, d, max;
	char sig[13];

	__cpuid(1, a, b, c, d);
	if (!(c & (1u << 31))) /* not running under a hypervisor */
		return 0;
	__cpuid(0x40000000, max, b, c, d);
	memcpy(sig, &b, 4);
	memcpy(sig + 4, &c, 4);
	memcpy(sig + 8, &d, 4);
	sig[12] = '\0';
	if (strcmp(sig, "VMwareVMware") && strcmp(sig, "KVMKVMKVM"))
		return 0;
	if (max < 0x40000010 || max >= 0x40010000)
		return 0;
	__cpuid(0x40000010, a, b, c, d);
	return freq_checked((double)a * 1e3);
}

/* Sources 3-4: what the CPU says. */
static double freq_from_cpuid(void)
{
	unsigned int a, b, c, d, max;
	double hz;

	max = (unsigned int)__get_cpuid_max(0, NULL);
	if (max >= 0x15) {
		__cpuid_count(0x15, 0, a, b, c, d);
		if (a && b && c) {
			hz = freq_checked((double)c * b / a);
			if (hz > 0)
				return hz;
		}
	}
	if (max >= 0x16) {
		__cpuid_count(0x16, 0, a, b, c, d);
		return freq_checked((double)(a & 0xffff) * 1e6);
	}
	return 0;
}
#endif /* SMART_HAVE_TSC */

/*
 * Read the TSC and clock id close together: of a few tries keep the one
 * with the shortest TSC bracket, and take the bracket's middle.
 */
static int clock_pair(clockid_t id, uint64_t *cycles, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	struct timespec ts;

	for (int i = 0; i < SAMPLE_TRIES; i++) {
		uint64_t t0, t1;

		t0 = smart__rdtsc();
		if (clock_gettime(id, &ts))
			return SMART_ESYS;
		t1 = smart__rdtsc();
		if (t1 < t0 || t1 - t0 >= best)
			continue; /* migrated or slower than before */
		best = t1 - t0;
		*cycles = t0 + best / 2;
		*ns = smart__ts_ns(&ts);
	}
	return best == UINT64_MAX ? SMART_ESYS : 0;
}

#if SMART_HAVE_TSC

/* Source 5: measure the rate against CLOCK_MONOTONIC_RAW. */
static int freq_measure(double *hz)
{
	struct timespec nap = { 0, CALIB_NS };
	uint64_t c0 = 0, n0 = 0, c1 = 0, n1 = 0; /* set by clock_pair */
	int rc;

	rc = clock_pair(CLOCK_MONOTONIC_RAW, &c0, &n0);
	if (rc)
		return rc;
	/* Sleeping is fine: an invariant TSC keeps counting. */
	while (nanosleep(&nap, &nap) && errno == EINTR)
		;
	rc = clock_pair(CLOCK_MONOTONIC_RAW, &c1, &n1);
	if (rc)
		return rc;
	if (n1 <= n0 || c1 <= c0)
		return SMART_ESYS;
	*hz = (double)(c1 - c0) * 1e9 / (double)(n1 - n0);
	return 0;
}
#endif /* SMART_HAVE_TSC */

__thread const uint64_t *smart__sim_vt
	__attribute__((tls_model("initial-exec")));

/* Under the virtual clock: its fixed rate, nothing measured (a real
 * calibration would spin 20 ms on a clock that does not move). */
static void clock_init_virtual(struct smart__clock *c)
{
	c->cycles_per_ns = (double)SMART_SIM_CYCLES_PER_NS_NUM /
			   SMART_SIM_CYCLES_PER_NS_DEN;
	c->use_tsc = 1;
	c->base_ns = smart__mono_ns();
	c->base_cycles = smart__rdtsc();
}

int smart__clock_init(struct smart__clock *c)
{
	struct smart__clock tmp = { .cycles_per_ns = 1.0 };
	int invariant = 0;
	double hz = 0;
	int rc;

	if (!c)
		return SMART_EINVAL;
	if (smart__sim_vt) {
		clock_init_virtual(c);
		return 0;
	}
#if SMART_HAVE_TSC
	invariant = tsc_invariant();
	hz = freq_from_sysfs();
	if (hz <= 0)
		hz = freq_from_hypervisor();
	if (hz <= 0)
		hz = freq_from_cpuid();
	if (hz <= 0) {
		rc = freq_measure(&hz);
		if (rc)
			return rc;
	}
	tmp.cycles_per_ns = hz / 1e9;
#endif
	tmp.use_tsc = invariant && hz > 0;
	rc = clock_pair(CLOCK_MONOTONIC, &tmp.base_cycles, &tmp.base_ns);
	if (rc)
		return rc;
	*c = tmp;
	return 0;
}

uint64_t smart_now_ns(void)
{
	return smart__mono_ns();
}

uint64_t smart_cycles(void)
{
	return smart__rdtsc();
}

double smart_cycles_per_sec(void)
{
	struct smart__clock c;

	if (smart__clock_init(&c))
		return 1e9; /* clock_gettime failed: cannot do better */
	return c.cycles_per_ns * 1e9;
}
