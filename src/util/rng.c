/*
 * Random numbers for workloads: xoshiro256** (Blackman and Vigna), seeded
 * through splitmix64, and a Zipf generator after Gray et al., "Quickly
 * generating billion-record synthetic databases" (SIGMOD 1994), in the form
 * YCSB's ZipfianGenerator uses.
 *
 * Invariants:
 *  - A generator is never seeded from the clock: the same seed gives the
 *    same stream on every run and host, which makes benchmarks repeatable.
 *  - splitmix64 never yields four zero words from one seed, so the xoshiro
 *    state is never all zero (the one state it cannot leave).
 *  - smart_zipf_next() returns a value in [0, n) for every rng state; the
 *    floating-point result is clamped rather than trusted.
 *
 * zeta(n, theta) = sum_{i=1..n} i^-theta is what makes Zipf set-up slow
 * (YCSB sums it term by term: seconds for n = 1e8).  Here the first
 * ZETA_DIRECT terms are summed and the rest, sum_{i=m..n} f(i) with
 * f(x) = x^-theta, comes from the Euler-Maclaurin formula
 *   integral_m^n f + (f(m) + f(n)) / 2
 *     + sum_{k=1..3} B_2k / (2k)! * (f^(2k-1)(n) - f^(2k-1)(m)).
 * The remainder is of the order of |B_8 / 8!| * 7! * m^-(theta+7), about
 * 2e-17 for m = 64 (below double rounding, far under the 1e-6 relative
 * error we promise), and the cost is a few pow() calls whatever n is.
 */
#include <math.h>

#include "smart/status.h"
#include "smart/util.h"

#define ZETA_DIRECT 64

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

void smart_rng_seed(smart_rng_t *r, uint64_t seed)
{
	if (!r)
		return;
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

uint64_t smart_rng_next(smart_rng_t *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

/*
 * Lemire, "Fast random integer generation in an interval" (2019): the high
 * word of x * n is uniform in [0, n) once the products whose low word falls
 * below 2^64 mod n are rejected.  The modulo runs only on the rare path.
 */
uint64_t smart_rng_below(smart_rng_t *r, uint64_t n)
{
	unsigned __int128 m;
	uint64_t low;

	if (n == 0)
		return 0;
	m = (unsigned __int128)smart_rng_next(r) * n;
	low = (uint64_t)m;
	if (low < n) {
		uint64_t threshold = -n % n;

		while (low < threshold) {
			m = (unsigned __int128)smart_rng_next(r) * n;
			low = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

double smart_rng_double(smart_rng_t *r)
{
	/* The top 53 bits fill a double's mantissa exactly. */
	return (double)(smart_rng_next(r) >> 11) * 0x1.0p-53;
}

/* The x^-theta derivative of odd order 2k-1 is -c_k x^(-theta-2k+1);
 * em_tail() needs c_1..c_3, the rising products of theta. */
static double em_tail(double m, double n, double theta)
{
	static const double bern[3] = { 1.0 / 12, -1.0 / 720, 1.0 / 30240 };
	double s = 1 - theta;
	double integral, sum, c = theta;

	/* (n^s - m^s) / s without cancellation as theta approaches 1. */
	integral = pow(m, s) * expm1(s * log(n / m)) / s;
	sum = integral + (pow(m, -theta) + pow(n, -theta)) / 2;
	for (int k = 0; k < 3; k++) {
		double e = -theta - (2 * k + 1);

		/* f^(2k-1)(n) - f^(2k-1)(m) = -c (n^e - m^e) = c (m^e - n^e) */
		sum += bern[k] * c * (pow(m, e) - pow(n, e));
		c *= (theta + 2 * k + 1) * (theta + 2 * k + 2);
	}
	return sum;
}

/* sum_{i=1..n} i^-theta */
static double zeta(uint64_t n, double theta)
{
	uint64_t direct = n < ZETA_DIRECT ? n : ZETA_DIRECT - 1;
	double sum = 0;

	for (uint64_t i = 1; i <= direct; i++)
		sum += pow((double)i, -theta);
	if (direct < n)
		sum += em_tail(ZETA_DIRECT, (double)n, theta);
	return sum;
}

int smart_zipf_init(smart_zipf_t *z, uint64_t n, double theta)
{
	smart_zipf_t t = { .n = n, .theta = theta };
	double zeta2;

	/* The negated test also rejects NaN. */
	if (!z || n == 0 || !(theta >= 0 && theta < 1))
		return SMART_EINVAL;
	t.alpha = 1 / (1 - theta);
	t.zetan = zeta(n, theta);
	t.half_pow = pow(0.5, theta);
	zeta2 = 1 + t.half_pow;
	/* With n <= 2 the first two cases of next() cover every draw and
	 * eta's formula would divide zero by zero. */
	if (n > 2)
		t.eta = (1 - pow(2.0 / (double)n, 1 - theta)) /
			(1 - zeta2 / t.zetan);
	*z = t;
	return 0;
}

uint64_t smart_zipf_next(const smart_zipf_t *z, smart_rng_t *r)
{
	double u, uz, base, v;

	if (z->theta == 0)
		return smart_rng_below(r, z->n);
	u = smart_rng_double(r);
	uz = u * z->zetan;
	if (uz < 1 || z->n == 1)
		return 0;
	if (uz < 1 + z->half_pow || z->n == 2)
		return 1;
	/* Positive in exact arithmetic; rounding may make it slightly off. */
	base = z->eta * u - z->eta + 1;
	if (!(base > 0))
		return 0;
	v = (double)z->n * pow(base, z->alpha);
	if (!(v < (double)z->n))
		return z->n - 1;
	return (uint64_t)v;
}
