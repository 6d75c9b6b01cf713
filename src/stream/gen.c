/*
 * Seeded generators of the benchmark workloads (docs/stream.md §5) and
 * their queries.  Record formats: YSB 78 B (user, page, campaign,
 * ad_type, event_type, ts, ip, d1, d2 as u64, d3 u32, d4 u16; the
 * Yahoo benchmark's fields as Slash and LightSaber lay them out), CM 64 B
 * (ts, job, task, machine as u64, then eight u32 with cpu in
 * thousandths), NB7 and NB11 bid 32 B (auction, bidder, price in cents,
 * ts; NB7's key is the auction, NB11's the bidder), RO 16 B (key, ts),
 * NB8 32 B (0 for a person, else the auction's id; person id or
 * seller; ts; a payload word).  NB8 ignores keys and skew: its ids are unique persons.
 *
 * Key skew: uniform, Zipf (smart_zipf_t), or a bounded Pareto law
 * (Slash's NB7 draws its auctions from a Pareto law for heavy hitters:
 * ../shared/design/stream.md §1.9, Fig. 9a-c; the paper gives no shape,
 * so the shape is the caller's): x on [1, H), H = keys + 1, by inverting
 * its distribution function, x = (1 - u (1 - H^-alpha))^(-1/alpha) for u
 * uniform in [0, 1), and key floor(x) - 1.  One uniform draw per record,
 * no rejection: the rest of the record's draws do not depend on it.
 *
 * Invariants: record i of a partition depends only on (workload, seed,
 * part, i, keys, zipf, pareto, disorder): any chunking gives the same
 * bytes; its event time is i minus a shift of at most `disorder`; a key is
 * below keys.
 */
#include <math.h>
#include <string.h>

#include "smart/util.h"
#include "stream/stream_int.h"

static const uint32_t rec_bytes[] = { 78, 64, 32, 16, 32, 32 };

/* NB8: an auction's seller is one of the last NB8_ACTIVE persons of a
 * partition (NEXMark's generator picks among its active people). */
#define NB8_ACTIVE 1000

static void q_fields(struct smart_stream_query *q, uint32_t key, uint32_t ts,
		     uint32_t val, uint32_t vsize)
{
	q->key = (struct smart_stream_field){ key, 8 };
	q->time = (struct smart_stream_field){ ts, 8 };
	q->value = (struct smart_stream_field){ val, vsize };
}

int smart_stream_gen_query(uint32_t workload, struct smart_stream_query *q)
{
	if (!q || workload > SMART_STREAM_GEN_NB8)
		return SMART_EINVAL;
	smart_stream_query_init(q);
	q->record_bytes = rec_bytes[workload];
	q->window = SMART_STREAM_TUMBLING;
	q->size = 10000;
	if (workload == SMART_STREAM_GEN_YSB) {
		q->filter = (struct smart_stream_field){ 32, 8 };
		q_fields(q, 16, 40, 0, 0);
	} else if (workload == SMART_STREAM_GEN_CM) {
		q_fields(q, 8, 0, 48, 4);
		q->agg = SMART_STREAM_AVG;
		q->size = 2000;
	} else if (workload == SMART_STREAM_GEN_NB7) {
		q_fields(q, 0, 24, 16, 8);
		q->agg = SMART_STREAM_MAX;
		q->size = 60000;
	} else if (workload == SMART_STREAM_GEN_NB11) {
		q_fields(q, 8, 24, 0, 0);
		q->window = SMART_STREAM_SESSION;
	} else if (workload == SMART_STREAM_GEN_NB8) {
		q_fields(q, 8, 16, 0, 8); /* 0 a person, else the auction id */
		q->agg = SMART_STREAM_JOIN;
	} else {
		q_fields(q, 0, 8, 0, 0);
		q->size = 1ULL << 40;
	}
	return 0;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void ysb(uint8_t *r, smart_rng_t *g, uint64_t key, uint64_t ts)
{
	for (int i = 0; i < 9; i++)
		put64(r + 8 * i, smart_rng_next(g));
	put64(r + 16, key);
	put64(r + 32, smart_rng_below(g, 3));
	put64(r + 40, ts);
	put32(r + 72, (uint32_t)smart_rng_next(g));
	r[76] = r[77] = 0;
}

static void cm(uint8_t *r, smart_rng_t *g, uint64_t key, uint64_t ts)
{
	for (int i = 0; i < 8; i++)
		put64(r + 8 * i, smart_rng_next(g));
	put64(r, ts);
	put64(r + 8, key);
	put32(r + 48, (uint32_t)smart_rng_below(g, 100001));
}

/* A NEXMark bid: auction, bidder, price in cents, time. */
static void bid(uint8_t *r, smart_rng_t *g, uint64_t auction, uint64_t bidder,
		uint64_t ts)
{
	put64(r, auction);
	put64(r + 8, bidder);
	put64(r + 16, smart_rng_below(g, 1000000));
	put64(r + 24, ts);
}

/* NB8: every 4th record a new person (id: its slot x parts + part),
 * the others auctions (1 person to 3 auctions, NEXMark's proportions
 * without the bids) whose seller is a recent person of any partition. */
static void nb8(uint8_t *r, smart_rng_t *g, const struct smart_stream_gen *sg,
		uint64_t i, uint64_t ts)
{
	uint64_t slot = i / 4,
		 back = smart_rng_below(g, slot < NB8_ACTIVE ? slot + 1 :
							       NB8_ACTIVE);
	int person = i % 4 == 0;

	if (!person)
		slot -= back;
	put64(r, person ? 0 : i * sg->parts + sg->part + 1); /* auction id */
	put64(r + 8,
	      slot * sg->parts +
		      (person ? sg->part : smart_rng_below(g, sg->parts)));
	put64(r + 16, ts);
	put64(r + 24, smart_rng_next(g)); /* name / reserve price */
}

/* The bounded Pareto law of the keys: alpha and 1 - H^-alpha. */
struct pareto {
	double inv_alpha, span;
};

static uint64_t pareto_key(const struct pareto *pa, uint64_t keys,
			   smart_rng_t *rng)
{
	double x = pow(1.0 - smart_rng_double(rng) * pa->span, -pa->inv_alpha);
	uint64_t k = (uint64_t)x - 1;

	/* x < H exactly, but pow may round up to H: the top key then */
	return k < keys ? k : keys - 1;
}

static void one(const struct smart_stream_gen *g, const smart_zipf_t *z,
		const struct pareto *pa, uint64_t i, uint8_t *r)
{
	smart_rng_t rng;
	uint64_t key, ts, shift;

	smart_rng_seed(&rng, smart_hash64(&i, sizeof(i),
					  g->seed * 977 + g->part * 131 +
						  g->workload));
	key = z	 ? smart_zipf_next(z, &rng) :
	      pa ? pareto_key(pa, g->keys, &rng) :
		   smart_rng_below(&rng, g->keys);
	shift = g->disorder ? smart_rng_below(&rng, g->disorder + 1) : 0;
	ts = i > shift ? i - shift : 0;
	if (g->workload == SMART_STREAM_GEN_YSB) {
		ysb(r, &rng, key, ts);
	} else if (g->workload == SMART_STREAM_GEN_CM) {
		cm(r, &rng, key, ts);
	} else if (g->workload == SMART_STREAM_GEN_NB7) {
		bid(r, &rng, key, smart_rng_next(&rng), ts);
	} else if (g->workload == SMART_STREAM_GEN_NB11) {
		bid(r, &rng, smart_rng_next(&rng), key, ts);
	} else if (g->workload == SMART_STREAM_GEN_NB8) {
		nb8(r, &rng, g, i, ts);
	} else {
		put64(r, key);
		put64(r + 8, ts);
	}
}

int smart_stream_gen_fill(const struct smart_stream_gen *g, uint64_t first,
			  size_t n, void *out)
{
	smart_zipf_t z;
	struct pareto pa = { 0, 0 };
	uint8_t *p = out;

	if (!g || (!out && n) || g->workload > SMART_STREAM_GEN_NB8 ||
	    !g->keys || g->keys > (1ULL << 40) || g->zipf_milli > 999 ||
	    !g->parts || g->part >= g->parts)
		return SMART_EINVAL;
	/* a shape of 0 would divide by zero; both skews set is ambiguous */
	if ((g->pareto_milli > 100000 || (g->pareto_milli && g->zipf_milli)) &&
	    !SMART_M_STREAM_GEN_PARETO_NO_CHECK)
		return SMART_EINVAL;
	if (g->zipf_milli &&
	    smart_zipf_init(&z, g->keys, g->zipf_milli / 1000.0))
		return SMART_EINVAL;
	if (g->pareto_milli) {
		double alpha = g->pareto_milli / 1000.0;

		pa.inv_alpha = 1.0 / alpha;
		pa.span = 1.0 - pow((double)g->keys + 1.0, -alpha);
	}
	for (size_t k = 0; k < n; k++, p += rec_bytes[g->workload])
		one(g, g->zipf_milli ? &z : NULL,
		    g->pareto_milli && !g->zipf_milli ? &pa : NULL, first + k,
		    p);
	return 0;
}
