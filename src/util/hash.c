/*
 * Hashing: smart_hash64(), a fast non-cryptographic 64-bit hash for keys,
 * and smart_crc32c(), CRC-32C (Castagnoli, reflected polynomial 0x82f63b78)
 * for integrity checks.
 *
 * smart_hash64 design.  The input is read as little-endian 64-bit words
 * (the last 1..7 bytes zero-padded into one more word), so a hash is the
 * same on every host.  The state starts as seed ^ P0 and absorbs the
 * length first, like a word, so that inputs of different lengths start
 * apart.  (Merely xoring len * P1 into the start would be linear in the
 * same way as the first word's w * P1, and "\x02" would collide with
 * "\x01\x00".)  Each word w is absorbed by
 *     h = rotl(h ^ w * P1, 31) * P2
 * where P1 and P2 are odd: every step is a bijection of w for a fixed h
 * and of h for a fixed w, and so is the finalizer.  Hence two inputs of
 * equal length that differ in just one word never collide; in particular
 * inputs of one length of at most 8 bytes never collide at all.  The
 * rotation brings the well-mixed high bits of the products down to where
 * the next multiplication spreads them upward again.  The finalizer is
 * the xorshift-multiply mix known from splitmix64, which gives full
 * avalanche.  Cost: one multiply chain per 8 bytes.  It offers no
 * protection against inputs crafted to collide.
 *
 * CRC-32C design.  Where the CPU has SSE4.2 (checked at run time) the
 * crc32 instruction does 8 bytes at a time; otherwise a 256-entry table
 * does one byte at a time.  Both keep the register inverted internally,
 * so smart_crc32c(smart_crc32c(0, a), b) == smart_crc32c(0, a || b).
 * The table is a literal (generated offline from the polynomial): no
 * static state is initialised at run time.
 *
 * The crc32 instruction has a latency of three cycles and a throughput of
 * one, so one chain of them runs at a third of the speed the unit has
 * (measured: 6.8 us for 64 KiB, eight memcpys' worth).  Long inputs are
 * therefore cut into blocks of three lanes of CRC_LANE bytes, run as three
 * independent chains, then joined: the register update is linear (the
 * internal, inverted register is the CRC of a message and of nothing
 * else), so crc(a, X || Y) = shift(crc(a, X), |Y|) ^ crc(0, Y), where
 * shift(c, n) is the update by n zero bytes.  shift by a fixed n is one
 * carry-less multiplication by a constant K_n, folded by one crc32 of the
 * 64-bit product: K_n = shift(1, n - 8), computed offline (and checked
 * against the byte-wise table for every lane length in
 * tests/unit/test_util.c crc32c_lanes).
 */
#include "util/hash.h"

#include <string.h>

#include "smart/util.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#include <wmmintrin.h>
#define HAVE_CRC_HW 1
#else
#define HAVE_CRC_HW 0
#endif

#define P0 UINT64_C(0x9e3779b97f4a7c15)
#define P1 UINT64_C(0xd6e8feb86659fd93)
#define P2 UINT64_C(0xff51afd7ed558ccd)

static uint64_t rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t le64(uint64_t w)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return __builtin_bswap64(w);
#else
	return w;
#endif
}

static uint64_t hash_step(uint64_t h, uint64_t w)
{
	return rotl64(h ^ w * P1, 31) * P2;
}

static uint64_t hash_final(uint64_t h)
{
	h = (h ^ (h >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	h = (h ^ (h >> 27)) * UINT64_C(0x94d049bb133111eb);
	return h ^ (h >> 31);
}

uint64_t smart_hash64(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t h = hash_step(seed ^ P0, (uint64_t)len);
	uint64_t w;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		h = hash_step(h, le64(w));
	}
	if (len) {
		w = 0;
		memcpy(&w, p, len);
		h = hash_step(h, le64(w));
	}
	return hash_final(h);
}

static const uint32_t crc32c_table[256] = {
	0x00000000, 0xf26b8303, 0xe13b70f7, 0x1350f3f4, 0xc79a971f, 0x35f1141c,
	0x26a1e7e8, 0xd4ca64eb, 0x8ad958cf, 0x78b2dbcc, 0x6be22838, 0x9989ab3b,
	0x4d43cfd0, 0xbf284cd3, 0xac78bf27, 0x5e133c24, 0x105ec76f, 0xe235446c,
	0xf165b798, 0x030e349b, 0xd7c45070, 0x25afd373, 0x36ff2087, 0xc494a384,
	0x9a879fa0, 0x68ec1ca3, 0x7bbcef57, 0x89d76c54, 0x5d1d08bf, 0xaf768bbc,
	0xbc267848, 0x4e4dfb4b, 0x20bd8ede, 0xd2d60ddd, 0xc186fe29, 0x33ed7d2a,
	0xe72719c1, 0x154c9ac2, 0x061c6936, 0xf477ea35, 0xaa64d611, 0x580f5512,
	0x4b5fa6e6, 0xb93425e5, 0x6dfe410e, 0x9f95c20d, 0x8cc531f9, 0x7eaeb2fa,
	0x30e349b1, 0xc288cab2, 0xd1d83946, 0x23b3ba45, 0xf779deae, 0x05125dad,
	0x1642ae59, 0xe4292d5a, 0xba3a117e, 0x4851927d, 0x5b016189, 0xa96ae28a,
	0x7da08661, 0x8fcb0562, 0x9c9bf696, 0x6ef07595, 0x417b1dbc, 0xb3109ebf,
	0xa0406d4b, 0x522bee48, 0x86e18aa3, 0x748a09a0, 0x67dafa54, 0x95b17957,
	0xcba24573, 0x39c9c670, 0x2a993584, 0xd8f2b687, 0x0c38d26c, 0xfe53516f,
	0xed03a29b, 0x1f682198, 0x5125dad3, 0xa34e59d0, 0xb01eaa24, 0x42752927,
	0x96bf4dcc, 0x64d4cecf, 0x77843d3b, 0x85efbe38, 0xdbfc821c, 0x2997011f,
	0x3ac7f2eb, 0xc8ac71e8, 0x1c661503, 0xee0d9600, 0xfd5d65f4, 0x0f36e6f7,
	0x61c69362, 0x93ad1061, 0x80fde395, 0x72966096, 0xa65c047d, 0x5437877e,
	0x4767748a, 0xb50cf789, 0xeb1fcbad, 0x197448ae, 0x0a24bb5a, 0xf84f3859,
	0x2c855cb2, 0xdeeedfb1, 0xcdbe2c45, 0x3fd5af46, 0x7198540d, 0x83f3d70e,
	0x90a324fa, 0x62c8a7f9, 0xb602c312, 0x44694011, 0x5739b3e5, 0xa55230e6,
	0xfb410cc2, 0x092a8fc1, 0x1a7a7c35, 0xe811ff36, 0x3cdb9bdd, 0xceb018de,
	0xdde0eb2a, 0x2f8b6829, 0x82f63b78, 0x709db87b, 0x63cd4b8f, 0x91a6c88c,
	0x456cac67, 0xb7072f64, 0xa457dc90, 0x563c5f93, 0x082f63b7, 0xfa44e0b4,
	0xe9141340, 0x1b7f9043, 0xcfb5f4a8, 0x3dde77ab, 0x2e8e845f, 0xdce5075c,
	0x92a8fc17, 0x60c37f14, 0x73938ce0, 0x81f80fe3, 0x55326b08, 0xa759e80b,
	0xb4091bff, 0x466298fc, 0x1871a4d8, 0xea1a27db, 0xf94ad42f, 0x0b21572c,
	0xdfeb33c7, 0x2d80b0c4, 0x3ed04330, 0xccbbc033, 0xa24bb5a6, 0x502036a5,
	0x4370c551, 0xb11b4652, 0x65d122b9, 0x97baa1ba, 0x84ea524e, 0x7681d14d,
	0x2892ed69, 0xdaf96e6a, 0xc9a99d9e, 0x3bc21e9d, 0xef087a76, 0x1d63f975,
	0x0e330a81, 0xfc588982, 0xb21572c9, 0x407ef1ca, 0x532e023e, 0xa145813d,
	0x758fe5d6, 0x87e466d5, 0x94b49521, 0x66df1622, 0x38cc2a06, 0xcaa7a905,
	0xd9f75af1, 0x2b9cd9f2, 0xff56bd19, 0x0d3d3e1a, 0x1e6dcdee, 0xec064eed,
	0xc38d26c4, 0x31e6a5c7, 0x22b65633, 0xd0ddd530, 0x0417b1db, 0xf67c32d8,
	0xe52cc12c, 0x1747422f, 0x49547e0b, 0xbb3ffd08, 0xa86f0efc, 0x5a048dff,
	0x8ecee914, 0x7ca56a17, 0x6ff599e3, 0x9d9e1ae0, 0xd3d3e1ab, 0x21b862a8,
	0x32e8915c, 0xc083125f, 0x144976b4, 0xe622f5b7, 0xf5720643, 0x07198540,
	0x590ab964, 0xab613a67, 0xb831c993, 0x4a5a4a90, 0x9e902e7b, 0x6cfbad78,
	0x7fab5e8c, 0x8dc0dd8f, 0xe330a81a, 0x115b2b19, 0x020bd8ed, 0xf0605bee,
	0x24aa3f05, 0xd6c1bc06, 0xc5914ff2, 0x37faccf1, 0x69e9f0d5, 0x9b8273d6,
	0x88d28022, 0x7ab90321, 0xae7367ca, 0x5c18e4c9, 0x4f48173d, 0xbd23943e,
	0xf36e6f75, 0x0105ec76, 0x12551f82, 0xe03e9c81, 0x34f4f86a, 0xc69f7b69,
	0xd5cf889d, 0x27a40b9e, 0x79b737ba, 0x8bdcb4b9, 0x988c474d, 0x6ae7c44e,
	0xbe2da0a5, 0x4c4623a6, 0x5f16d052, 0xad7d5351,
};

uint32_t smart__crc32c_sw(uint32_t crc, const void *data, size_t len)
{
	const unsigned char *p = data;

	crc = ~crc;
	while (len--)
		crc = crc32c_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

#if HAVE_CRC_HW
#define CRC_LANE    2048	/* bytes per lane of a three-lane block */
#define CRC_K_LANE  0xa51b6135u /* K_n for n = CRC_LANE */
#define CRC_K_2LANE 0x82f89c77u /* and for n = 2 x CRC_LANE */

/* The register c updated by n zero bytes, n the length of K_n. */
__attribute__((target("sse4.2,pclmul"))) static uint64_t
crc32c_shift(uint64_t c, uint32_t k)
{
	__m128i p = _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)c),
					 _mm_cvtsi32_si128((int)k), 0);

	return _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(p));
}

/* Whole three-lane blocks from p: the register after them. */
__attribute__((target("sse4.2,pclmul"))) static uint64_t
crc32c_lanes(uint64_t c, const unsigned char **pp, size_t *len)
{
	const unsigned char *p = *pp;

	for (; *len >= 3 * CRC_LANE; p += 3 * CRC_LANE, *len -= 3 * CRC_LANE) {
		uint64_t b = 0, d = 0, w0, w1, w2;

		for (size_t i = 0; i < CRC_LANE; i += 8) {
			memcpy(&w0, p + i, 8);
			memcpy(&w1, p + CRC_LANE + i, 8);
			memcpy(&w2, p + 2 * CRC_LANE + i, 8);
			c = _mm_crc32_u64(c, w0);
			b = _mm_crc32_u64(b, w1);
			d = _mm_crc32_u64(d, w2);
		}
		c = crc32c_shift(c, CRC_K_2LANE) ^ crc32c_shift(b, CRC_K_LANE) ^
		    d;
	}
	*pp = p;
	return c;
}

__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t crc, const unsigned char *p, size_t len, int lanes)
{
	uint64_t c = ~crc, w;

	/* Align so that the 8-byte loads do not straddle cache lines. */
	for (; len && ((uintptr_t)p & 7); len--)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	if (lanes)
		c = crc32c_lanes(c, &p, &len);
	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		c = _mm_crc32_u64(c, w);
	}
	while (len--)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	return ~(uint32_t)c;
}
#endif

int smart__crc32c_hw_available(void)
{
#if HAVE_CRC_HW
	/* Needed only if we run before libgcc's constructor; cheap after. */
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse4.2") != 0;
#else
	return 0;
#endif
}

/* Lanes need the carry-less multiply too (every x86-64 CPU with SSE4.2
 * since 2010 has it, but it is asked, not assumed). */
static int crc32c_lanes_available(void)
{
#if HAVE_CRC_HW
	return __builtin_cpu_supports("pclmul") != 0;
#else
	return 0;
#endif
}

uint32_t smart_crc32c(uint32_t crc, const void *data, size_t len)
{
	if (!data || !len)
		return crc;
#if HAVE_CRC_HW
	if (smart__crc32c_hw_available())
		return crc32c_hw(crc, data, len, crc32c_lanes_available());
#endif
	return smart__crc32c_sw(crc, data, len);
}
