/*
 * Unit tests of the util layer: status strings, log level parsing and log
 * line format, clocks, RNG, Zipf, histogram, hash64, CRC-32C and the
 * memory check.
 *
 * Everything is deterministic: fixed seeds, and the clock checks compare
 * two clocks over the same window (a sanity bound on the calibration), so
 * a slow or loaded machine cannot make them fail.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <time.h>
#include <unistd.h>

#include "harness/test.h"
#include "smart/status.h"
#include "smart/util.h"
#include "util/bytes.h"
#include "util/clock.h"
#include "util/sockio.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/sysmem.h"

/* ---- status ---- */

static void test_status(void)
{
	static const int unknown[] = { 1,    42,      SMART_E_LAST,
				       -100, INT_MIN, INT_MAX };

	CHECK_STR_EQ(smart_status_name(SMART_OK), "SMART_OK");
	CHECK_STR_EQ(smart_status_name(SMART_EINVAL), "SMART_EINVAL");
	CHECK_STR_EQ(smart_status_name(SMART_ERETRY), "SMART_ERETRY");
	CHECK_STR_EQ(smart_strerror(SMART_OK), "success");
	for (int s = 0; s > SMART_E_LAST; s--) {
		const char *name = smart_status_name(s);
		const char *msg = smart_strerror(s);

		CHECK(name && msg);
		CHECK_MSG(!strncmp(name, "SMART_", 6) &&
				  strcmp(name, "SMART_E?"),
			  "bad name for %d: %s", s, name);
		CHECK_MSG(msg[0] && strcmp(msg, "unknown"), "no msg for %d", s);
		/* Names are distinct. */
		for (int t = 0; t > s; t--)
			CHECK(strcmp(name, smart_status_name(t)));
	}
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		CHECK_STR_EQ(smart_strerror(unknown[i]), "unknown");
		CHECK_STR_EQ(smart_status_name(unknown[i]), "SMART_E?");
	}
}

/* ---- log ---- */

static void test_log_parse(void)
{
	CHECK_EQ(smart__log_parse_level("error"), SMART_LOG_ERROR);
	CHECK_EQ(smart__log_parse_level("warn"), SMART_LOG_WARN);
	CHECK_EQ(smart__log_parse_level("WARNING"), SMART_LOG_WARN);
	CHECK_EQ(smart__log_parse_level("Info"), SMART_LOG_INFO);
	CHECK_EQ(smart__log_parse_level("debug"), SMART_LOG_DEBUG);
	CHECK_EQ(smart__log_parse_level("0"), 0);
	CHECK_EQ(smart__log_parse_level("3"), 3);
	CHECK_EQ(smart__log_parse_level("4"), -1);
	CHECK_EQ(smart__log_parse_level("-1"), -1);
	CHECK_EQ(smart__log_parse_level("01"), -1);
	CHECK_EQ(smart__log_parse_level(""), -1);
	CHECK_EQ(smart__log_parse_level("debugx"), -1);
	CHECK_EQ(smart__log_parse_level(NULL), -1);
}

/* Redirect fd 2 into a temporary file while a log call runs. */
struct capture {
	FILE *f;
	int saved;
};

static void capture_begin(struct capture *c)
{
	fflush(stderr);
	c->f = tmpfile();
	CHECK(c->f);
	c->saved = dup(STDERR_FILENO);
	CHECK(c->saved >= 0);
	CHECK(dup2(fileno(c->f), STDERR_FILENO) >= 0);
}

static size_t capture_end(struct capture *c, char *buf, size_t cap)
{
	size_t n;

	CHECK(dup2(c->saved, STDERR_FILENO) >= 0);
	close(c->saved);
	rewind(c->f);
	n = fread(buf, 1, cap - 1, c->f);
	buf[n] = '\0';
	fclose(c->f);
	return n;
}

static void test_log_msg(void)
{
	struct smart__log lg = { .level = SMART_LOG_DEBUG, .prefix = "tst" };
	struct smart__log quiet = { .level = SMART_LOG_ERROR };
	static char big[3000], out[4096];
	struct capture c;
	size_t n;

	capture_begin(&c);
	errno = ENOENT;
	smart__warn(NULL, "hello %d", 42);
	CHECK_EQ(errno, ENOENT);
	smart__info(NULL, "not shown");
	smart__dbg(&lg, "dbg %s", "x");
	smart__warn(&quiet, "not shown either");
	smart__err(&quiet, "e");
	CHECK_EQ(errno, ENOENT);
	capture_end(&c, out, sizeof(out));
	CHECK_STR_EQ(out, "smart: warn: hello 42\ntst: debug: dbg x\n"
			  "smart: error: e\n");

	/* An over-long message is cut, marked and still one line. */
	memset(big, 'a', sizeof(big) - 1);
	capture_begin(&c);
	smart__err(&lg, "%s", big);
	n = capture_end(&c, out, sizeof(out));
	CHECK_LE(n, 1024);
	CHECK(!strncmp(out, "tst: error: aaa", 15));
	CHECK(!strcmp(out + n - 4, "...\n"));
	CHECK(!strchr(out, '\n') || strchr(out, '\n') == out + n - 1);
}

/* ---- clock ---- */

static void test_clock_monotonic(void)
{
	uint64_t prev = smart_now_ns(), now;

	CHECK_GT(prev, 0);
	for (int i = 0; i < 100000; i++) {
		now = smart_now_ns();
		CHECK_GE(now, prev);
		prev = now;
	}
	CHECK_EQ(smart__clock_init(NULL), SMART_EINVAL);
}

/* The three clocks read at one instant: CLOCK_MONOTONIC (*n, the middle
 * of two reads) around the internal clock (*k) and the cycle counter
 * (*t).  A preemption between the reads would skew every ratio below by
 * its length over the 50-ms interval (2.5 ms is 5%): a reading whose
 * bracket is wider than 20 us is taken again (a preemption inside a
 * window of well under a microsecond, 1000 times running, is not the
 * load of any machine). */
static void clocks_now(struct smart__clock *c, uint64_t *n, uint64_t *k,
		       uint64_t *t)
{
	uint64_t a, b;
	int i;

	for (i = 0; i < 1000; i++) {
		a = smart_now_ns();
		*k = smart__clock_ns(c);
		*t = smart_cycles();
		b = smart_now_ns();
		if (b - a < 20000)
			break;
	}
	CHECK_LT(i, 1000);
	*n = a + (b - a) / 2;
}

static void test_clock_calibration(void)
{
	struct smart__clock c;
	uint64_t n0, n1, k0, k1, t0, t1;
	double hz, tsc_hz, ratio;

	CHECK_OK(smart__clock_init(&c));
	CHECK(c.cycles_per_ns > 0);
	if (!c.use_tsc)
		printf("note: tsc not invariant, clock uses clock_gettime\n");
	hz = smart_cycles_per_sec();
	CHECK(hz > 0);

	clocks_now(&c, &n0, &k0, &t0);
	sleep_ms(50);
	clocks_now(&c, &n1, &k1, &t1);
	CHECK_GT(k1, k0);
	CHECK_GT(t1, t0);

	/* The internal clock advances like CLOCK_MONOTONIC (within 5%). */
	ratio = (double)(k1 - k0) / (double)(n1 - n0);
	CHECK_MSG(fabs(ratio - 1) < 0.05, "clock_ns ratio %.4f", ratio);
	/* Both frequency estimates match the observed cycle rate. */
	tsc_hz = (double)(t1 - t0) * 1e9 / (double)(n1 - n0);
	CHECK_MSG(fabs(hz / tsc_hz - 1) < 0.05, "cycles/s %.0f vs %.0f", hz,
		  tsc_hz);
	CHECK_MSG(fabs(c.cycles_per_ns * 1e9 / tsc_hz - 1) < 0.05,
		  "cycles_per_ns %.4f vs %.0f Hz", c.cycles_per_ns, tsc_hz);
	printf("tsc %.3f MHz (measured %.3f MHz)\n", hz / 1e6, tsc_hz / 1e6);
}

/* ---- rng ---- */

static void test_rng_determinism(void)
{
	/* Reference values from an independent model of splitmix64 seeding
	 * and xoshiro256**. */
	static const uint64_t seed42[3] = { UINT64_C(0x15780b2e0c2ec716),
					    UINT64_C(0x6104d9866d113a7e),
					    UINT64_C(0xae17533239e499a1) };
	smart_rng_t a, b, c;
	int same = 0;

	smart_rng_seed(&a, 42);
	for (int i = 0; i < 3; i++)
		CHECK_U64_EQ(smart_rng_next(&a), seed42[i]);
	smart_rng_seed(&a, 0);
	CHECK_U64_EQ(smart_rng_next(&a), UINT64_C(0x99ec5f36cb75f2b4));

	smart_rng_seed(&a, 7);
	smart_rng_seed(&b, 7);
	smart_rng_seed(&c, 8);
	for (int i = 0; i < 1000; i++) {
		uint64_t x = smart_rng_next(&a);

		CHECK_U64_EQ(x, smart_rng_next(&b));
		same += x == smart_rng_next(&c);
	}
	CHECK_EQ(same, 0);
	smart_rng_seed(NULL, 1); /* ignored, no crash */
}

static void test_rng_below(void)
{
	static const uint64_t ns[] = { 1,
				       2,
				       3,
				       7,
				       1000,
				       UINT64_C(1) << 32,
				       (UINT64_C(1) << 63) + 1,
				       UINT64_MAX };
	uint64_t counts[6] = { 0 };
	smart_rng_t r;
	double d;

	smart_rng_seed(&r, 1);
	CHECK_U64_EQ(smart_rng_below(&r, 0), 0);
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		for (int k = 0; k < 20000; k++) {
			uint64_t v = smart_rng_below(&r, ns[i]);

			CHECK_MSG(v < ns[i], "%" PRIu64 " >= %" PRIu64, v,
				  ns[i]);
		}
	}
	for (int k = 0; k < 600000; k++)
		counts[smart_rng_below(&r, 6)]++;
	for (int i = 0; i < 6; i++)
		CHECK_MSG(counts[i] > 97000 && counts[i] < 103000,
			  "bucket %d has %" PRIu64, i, counts[i]);
	for (int k = 0; k < 100000; k++) {
		d = smart_rng_double(&r);
		CHECK(d >= 0 && d < 1);
	}
}

/* ---- zipf ---- */

static double zeta_direct(uint64_t n, double theta)
{
	double sum = 0;

	for (uint64_t i = 1; i <= n; i++)
		sum += pow((double)i, -theta);
	return sum;
}

static void test_zipf_params(void)
{
	smart_zipf_t z;
	smart_rng_t r;

	CHECK_EQ(smart_zipf_init(NULL, 10, 0.5), SMART_EINVAL);
	CHECK_EQ(smart_zipf_init(&z, 0, 0.5), SMART_EINVAL);
	CHECK_EQ(smart_zipf_init(&z, 10, 1.0), SMART_EINVAL);
	CHECK_EQ(smart_zipf_init(&z, 10, -0.1), SMART_EINVAL);
	CHECK_EQ(smart_zipf_init(&z, 10, NAN), SMART_EINVAL);
	CHECK_EQ(smart_zipf_init(&z, 10, INFINITY), SMART_EINVAL);

	smart_rng_seed(&r, 3);
	CHECK_OK(smart_zipf_init(&z, 1, 0.99));
	for (int i = 0; i < 1000; i++)
		CHECK_EQ(smart_zipf_next(&z, &r), 0);
	CHECK_OK(smart_zipf_init(&z, 2, 0.99));
	for (int i = 0; i < 1000; i++)
		CHECK_LT(smart_zipf_next(&z, &r), 2);
	CHECK_OK(smart_zipf_init(&z, UINT64_MAX, 0.9999));
	for (int i = 0; i < 1000; i++)
		CHECK_U64_EQ(smart_zipf_next(&z, &r) < UINT64_MAX, 1);
}

static void test_zipf_skewed(void)
{
	const uint64_t n = 1000, draws = 1000000;
	uint64_t hits0 = 0, hits1 = 0, v;
	double p0, p1;
	smart_zipf_t z;
	smart_rng_t r;

	CHECK_OK(smart_zipf_init(&z, n, 0.99));
	CHECK_MSG(fabs(z.zetan / zeta_direct(n, 0.99) - 1) < 1e-9,
		  "zetan %.12f", z.zetan);
	smart_rng_seed(&r, 12345);
	for (uint64_t i = 0; i < draws; i++) {
		v = smart_zipf_next(&z, &r);
		CHECK_LT(v, n);
		hits0 += v == 0;
		hits1 += v == 1;
	}
	p0 = 1 / z.zetan;
	p1 = pow(2, -0.99) / z.zetan;
	CHECK_MSG(fabs((double)hits0 / draws / p0 - 1) < 0.10,
		  "item 0: %" PRIu64 " hits, p %.4f", hits0, p0);
	CHECK_MSG(fabs((double)hits1 / draws / p1 - 1) < 0.10,
		  "item 1: %" PRIu64 " hits, p %.4f", hits1, p1);
}

static void test_zipf_uniform(void)
{
	uint64_t counts[10] = { 0 };
	smart_zipf_t z;
	smart_rng_t r;

	CHECK_OK(smart_zipf_init(&z, 10, 0));
	CHECK(fabs(z.zetan - 10) < 1e-12);
	smart_rng_seed(&r, 99);
	for (int i = 0; i < 200000; i++)
		counts[smart_zipf_next(&z, &r)]++;
	for (int i = 0; i < 10; i++)
		CHECK_MSG(counts[i] > 19000 && counts[i] < 21000,
			  "item %d has %" PRIu64, i, counts[i]);
}

static void test_zipf_large(void)
{
	static const double thetas[] = { 0, 0.2, 0.5, 0.9, 0.99, 0.999999 };
	smart_zipf_t z;
	smart_rng_t r;
	double want;

	/* Must not sum 1e8 terms (no time assert: just call it). */
	CHECK_OK(smart_zipf_init(&z, 100000000, 0.99));
	CHECK(isfinite(z.zetan) && z.zetan > 1);
	smart_rng_seed(&r, 5);
	for (int i = 0; i < 10000; i++)
		CHECK_LT(smart_zipf_next(&z, &r), 100000000);

	for (size_t i = 0; i < sizeof(thetas) / sizeof(thetas[0]); i++) {
		CHECK_OK(smart_zipf_init(&z, 1000000, thetas[i]));
		want = zeta_direct(1000000, thetas[i]);
		CHECK_MSG(fabs(z.zetan / want - 1) < 1e-6,
			  "theta %g: zetan %.10f, direct %.10f", thetas[i],
			  z.zetan, want);
	}
	/* Small n around the switch to Euler-Maclaurin. */
	for (uint64_t n = 60; n < 70; n++) {
		CHECK_OK(smart_zipf_init(&z, n, 0.99));
		CHECK(fabs(z.zetan / zeta_direct(n, 0.99) - 1) < 1e-9);
	}
}

/* ---- histogram ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Quantiles of h against the exact ones of the sorted sample v[0..n). */
static void check_quantiles(const smart_hist_t *h, const uint64_t *v, size_t n)
{
	static const double qs[] = { 0.01, 0.1,	 0.25,	0.5,   0.75,
				     0.9,  0.99, 0.999, 0.9999 };

	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		size_t rank = (size_t)ceil(qs[i] * (double)n);
		double exact = (double)v[rank ? rank - 1 : 0];
		double got = smart_hist_quantile(h, qs[i]);

		CHECK_MSG(fabs(got - exact) <= 0.032 * exact,
			  "q %g: got %.1f, exact %.1f", qs[i], got, exact);
	}
	CHECK(smart_hist_quantile(h, 0) == (double)v[0]);
	CHECK(smart_hist_quantile(h, 1) == (double)v[n - 1]);
}

static void test_hist_small_exact(void)
{
	smart_hist_t h;

	smart_hist_init(&h);
	CHECK(smart_hist_quantile(&h, 0.5) == 0);
	CHECK(smart_hist_mean(&h) == 0);
	for (uint64_t v = 0; v < 32; v++)
		smart_hist_add(&h, v);
	for (uint64_t v = 0; v < 32; v++)
		CHECK_MSG(smart_hist_quantile(&h, (v + 0.5) / 32) == (double)v,
			  "value %" PRIu64, v);
	CHECK(smart_hist_mean(&h) == 15.5);
	CHECK_U64_EQ(h.count, 32);
	CHECK_U64_EQ(h.min, 0);
	CHECK_U64_EQ(h.max, 31);
}

static void test_hist_distributions(void)
{
	enum { N = 200000 };
	static uint64_t v[N];
	smart_hist_t h, a, b;
	smart_rng_t r;

	/* Uniform over a wide range. */
	smart_rng_seed(&r, 11);
	smart_hist_init(&h);
	for (size_t i = 0; i < N; i++) {
		v[i] = 1000 + smart_rng_below(&r, 10000000);
		smart_hist_add(&h, v[i]);
	}
	qsort(v, N, sizeof(v[0]), cmp_u64);
	check_quantiles(&h, v, N);

	/* Exponential with mean 50 us, plus a long log-uniform tail; split
	 * into two histograms that are merged afterwards. */
	smart_hist_init(&h);
	smart_hist_init(&a);
	memset(&b, 0, sizeof(b)); /* all-zero is a valid empty one */
	for (size_t i = 0; i < N; i++) {
		double u = smart_rng_double(&r);

		if (i % 10 == 0)
			v[i] = (uint64_t)exp2(10 + 40 * u);
		else
			v[i] = (uint64_t)(-50000 * log1p(-u));
		smart_hist_add(&h, v[i]);
		smart_hist_add(i % 3 ? &a : &b, v[i]);
	}
	qsort(v, N, sizeof(v[0]), cmp_u64);
	check_quantiles(&h, v, N);
	smart_hist_merge(&a, &b);
	CHECK(!memcmp(&a, &h, sizeof(h)));
	check_quantiles(&a, v, N);
}

static void test_hist_merge_edges(void)
{
	smart_hist_t h, e;

	smart_hist_init(&h);
	smart_hist_init(&e);
	smart_hist_merge(&h, &e);
	CHECK_U64_EQ(h.count, 0);
	CHECK(smart_hist_quantile(&h, 0.99) == 0);

	smart_hist_add(&e, 100);
	smart_hist_merge(&h, &e);
	CHECK_U64_EQ(h.min, 100);
	CHECK_U64_EQ(h.max, 100);
	CHECK(smart_hist_quantile(&h, 0.5) == 100);

	/* Extreme values land in range; the sum saturates. */
	smart_hist_add(&h, UINT64_MAX);
	smart_hist_add(&h, UINT64_MAX);
	smart_hist_add(&h, 0);
	CHECK_U64_EQ(h.sum, UINT64_MAX);
	CHECK_U64_EQ(h.min, 0);
	CHECK(smart_hist_quantile(&h, 1) == (double)UINT64_MAX);
	CHECK(smart_hist_quantile(&h, 0.9) >= 0.968 * (double)UINT64_MAX);
	CHECK(smart_hist_quantile(&h, NAN) == 0);
	CHECK(smart_hist_quantile(&h, -1) == 0);
	CHECK(smart_hist_quantile(&h, 2) == (double)UINT64_MAX);
}

/* ---- crc32c ---- */

static void test_crc32c_vectors(void)
{
	static const char check[] = "123456789";
	unsigned char buf[32];

	CHECK_U64_EQ(smart_crc32c(0, check, 9), 0xe3069283);
	CHECK_U64_EQ(smart__crc32c_sw(0, check, 9), 0xe3069283);
	CHECK_U64_EQ(smart_crc32c(0, NULL, 0), 0);
	CHECK_U64_EQ(smart_crc32c(0x1234, "", 0), 0x1234);
	/* RFC 3720 (iSCSI) B.4 test vectors. */
	memset(buf, 0, sizeof(buf));
	CHECK_U64_EQ(smart_crc32c(0, buf, 32), 0x8a9136aa);
	memset(buf, 0xff, sizeof(buf));
	CHECK_U64_EQ(smart_crc32c(0, buf, 32), 0x62a8ab43);
	for (int i = 0; i < 32; i++)
		buf[i] = (unsigned char)i;
	CHECK_U64_EQ(smart_crc32c(0, buf, 32), 0x46dd794e);
	CHECK_U64_EQ(smart__crc32c_sw(0, buf, 32), 0x46dd794e);
	for (int i = 0; i < 32; i++)
		buf[i] = (unsigned char)(31 - i);
	CHECK_U64_EQ(smart_crc32c(0, buf, 32), 0x113fdb5c);
	/* Continuing from a previous value equals one pass. */
	CHECK_U64_EQ(smart_crc32c(smart_crc32c(0, check, 4), check + 4, 5),
		     0xe3069283);
}

/* Inputs long enough for the three-lane blocks (6 KiB each, src/util/
 * hash.c): every length around one, two and three blocks, at every
 * alignment, from random registers, equal to the table's answer; and a
 * long one cut anywhere equal to one pass. */
static void test_crc32c_lanes(void)
{
	static unsigned char buf[3 * 6144 + 64];
	const size_t base[] = { 6144, 2 * 6144, 3 * 6144 };
	smart_rng_t r;
	size_t n = 0;

	smart_rng_seed(&r, 78);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)smart_rng_next(&r);
	for (int b = 0; b < 3; b++)
		for (size_t len = base[b] - 9; len <= base[b] + 9; len++)
			for (size_t align = 0; align < 8; align++, n++) {
				uint32_t seed = (uint32_t)smart_rng_next(&r);

				CHECK_U64_EQ(smart_crc32c(seed, buf + align,
							  len),
					     smart__crc32c_sw(seed, buf + align,
							      len));
			}
	for (int i = 0; i < 64; i++, n++) {
		size_t cut = smart_rng_next(&r) % (3 * 6144);
		uint32_t one = smart_crc32c(0, buf, 3 * 6144);

		CHECK_U64_EQ(smart_crc32c(smart_crc32c(0, buf, cut), buf + cut,
					  3 * 6144 - cut),
			     one);
	}
	printf("   %zu inputs of 6..18 KiB equal to the table's CRC\n", n);
}

static void test_crc32c_hw_sw(void)
{
	static unsigned char buf[300 + 8];
	smart_rng_t r;

	if (!smart__crc32c_hw_available())
		printf("note: no sse4.2, both sides use the table\n");
	smart_rng_seed(&r, 77);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)smart_rng_next(&r);
	for (size_t align = 0; align < 8; align++) {
		for (size_t len = 0; len <= 300; len++) {
			uint32_t seed = (uint32_t)smart_rng_next(&r);
			uint32_t hw = smart_crc32c(seed, buf + align, len);
			uint32_t sw = smart__crc32c_sw(seed, buf + align, len);

			CHECK_MSG(hw == sw, "align %zu len %zu: %08x vs %08x",
				  align, len, hw, sw);
		}
	}
}

/* ---- hash64 ---- */

#define HASH_EMPTY UINT64_C(0xfc6c5e9d72a82941)
#define HASH_HELLO UINT64_C(0x321d4baa1cee3569)

/* smart__mem_enough's quick answer (sysinfo) agrees with MemAvailable:
 * a page fits, and what passes the available memory is refused (the
 * quick test never says yes to it). */
static void test_mem_enough(void)
{
	uint64_t avail = smart__mem_available();

	CHECK(smart__mem_enough(4096));
	if (avail == UINT64_MAX)
		return; /* /proc/meminfo unreadable: nothing refused */
	CHECK(smart__mem_enough(avail / 4));
	CHECK(!smart__mem_enough(avail + (UINT64_C(1) << 40)));
	CHECK(!smart__mem_enough(UINT64_C(1) << 62));
}

static void test_hash64(void)
{
	/* + all strings of length 0..8 over a 4-letter alphabet */
	enum { NKEYS = 1 + 256 + 65536 + 100000 + 87381 };
	static const unsigned char abc[4] = { 0, 1, 2, 0xff };
	static uint64_t h[NKEYS];
	unsigned char k[16] = { 0 };
	size_t n = 0;
	char key[32];
	int flips = 0;

	/* Every string of 0, 1 and 2 bytes, and 100000 printable keys. */
	h[n++] = smart_hash64(k, 0, 0);
	for (int a = 0; a < 256; a++) {
		k[0] = (unsigned char)a;
		h[n++] = smart_hash64(k, 1, 0);
		for (int b = 0; b < 256; b++) {
			k[1] = (unsigned char)b;
			h[n++] = smart_hash64(k, 2, 0);
		}
	}
	for (int i = 0; i < 100000; i++) {
		int len = snprintf(key, sizeof(key), "user%d", i);

		h[n++] = smart_hash64(key, (size_t)len, 0);
	}
	/* Lengths and contents that a linear length mix would confuse. */
	for (size_t len = 0; len <= 8; len++) {
		for (uint32_t code = 0; code < (1u << (2 * len)); code++) {
			for (size_t j = 0; j < len; j++)
				k[j] = abc[(code >> (2 * j)) & 3];
			h[n++] = smart_hash64(k, len, 0x1234);
		}
	}
	CHECK_EQ(n, NKEYS);
	qsort(h, n, sizeof(h[0]), cmp_u64);
	for (size_t i = 1; i < n; i++)
		CHECK_MSG(h[i] != h[i - 1], "collision at %zu", i);

	/* Pinned: hashes may be stored, so the function must not change. */
	CHECK_U64_EQ(smart_hash64("", 0, 0), HASH_EMPTY);
	CHECK_U64_EQ(smart_hash64("hello, world", 12, 7), HASH_HELLO);

	/* The seed matters, also for the empty string. */
	CHECK(smart_hash64("", 0, 1) != smart_hash64("", 0, 2));
	CHECK(smart_hash64("key", 3, 0) != smart_hash64("key", 3, 1));
	CHECK(smart_hash64("a long key over 8 bytes", 23, 0) !=
	      smart_hash64("a long key over 8 bytes", 23, 0x100));
	/* Trailing zero bytes are not ignored. */
	CHECK(smart_hash64("ab\0", 3, 0) != smart_hash64("ab", 2, 0));

	/* Avalanche: one flipped input bit changes about half the output. */
	memset(k, 0x5a, sizeof(k));
	for (int bit = 0; bit < 128; bit++) {
		uint64_t base = smart_hash64(k, sizeof(k), 9), x;

		k[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		x = smart_hash64(k, sizeof(k), 9);
		k[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		flips += __builtin_popcountll(base ^ x);
	}
	CHECK_MSG(flips > 128 * 28 && flips < 128 * 36, "flips %d", flips);
}

/* The one byte order (util/bytes.h): little-endian bytes in memory,
 * whatever the host, at any alignment; each width round-trips. */
static void test_bytes_order(void)
{
	static const uint8_t want[8] = { 0x08, 0x07, 0x06, 0x05,
					 0x04, 0x03, 0x02, 0x01 };
	uint8_t buf[9];

	memset(buf, 0xee, sizeof(buf));
	smart__put64(buf + 1, 0x0102030405060708ull); /* unaligned */
	CHECK(memcmp(buf + 1, want, 8) == 0);
	CHECK_EQ(buf[0], 0xee);
	CHECK_EQ(smart__get64(buf + 1), 0x0102030405060708ull);
	CHECK_EQ(smart__get32(buf + 1), 0x05060708u);
	CHECK_EQ(smart__get16(buf + 1), 0x0708u);
	smart__put32(buf, 0xa1b2c3d4u);
	CHECK(buf[0] == 0xd4 && buf[1] == 0xc3 && buf[2] == 0xb2 &&
	      buf[3] == 0xa1);
	smart__put16(buf + 7, 0xbeefu);
	CHECK(buf[7] == 0xef && buf[8] == 0xbe);
	CHECK_EQ(smart__get16(buf + 7), 0xbeefu);
}

/* The one clock conversion: milliseconds (the control paths' deadlines)
 * are the nanosecond clock divided, so readings in the two units taken in
 * order compare in order. */
static void test_clock_units(void)
{
	uint64_t ns0 = smart__mono_ns();
	int64_t ms = smart__now_ms();
	uint64_t ns1 = smart__mono_ns();

	CHECK((uint64_t)ms >= ns0 / 1000000u);
	CHECK((uint64_t)ms <= ns1 / 1000000u);
	CHECK(smart__mono_ms() >= (uint64_t)ms);
	CHECK(smart_now_ns() >= ns1);
}

int main(int argc, char **argv)
{
	return test_main(
		argc, argv,
		(struct test_case[]){
			{ "status", test_status },
			{ "log_parse", test_log_parse },
			{ "log_msg", test_log_msg },
			{ "clock_monotonic", test_clock_monotonic },
			{ "clock_calibration", test_clock_calibration },
			{ "clock_units", test_clock_units },
			{ "bytes_order", test_bytes_order },
			{ "rng_determinism", test_rng_determinism },
			{ "rng_below", test_rng_below },
			{ "zipf_params", test_zipf_params },
			{ "zipf_skewed", test_zipf_skewed },
			{ "zipf_uniform", test_zipf_uniform },
			{ "zipf_large", test_zipf_large },
			{ "hist_small_exact", test_hist_small_exact },
			{ "hist_distributions", test_hist_distributions },
			{ "hist_merge_edges", test_hist_merge_edges },
			{ "crc32c_vectors", test_crc32c_vectors },
			{ "crc32c_hw_sw", test_crc32c_hw_sw },
			{ "crc32c_lanes", test_crc32c_lanes },
			{ "hash64", test_hash64 },
			{ "mem_enough", test_mem_enough },
			{ 0 } });
}
