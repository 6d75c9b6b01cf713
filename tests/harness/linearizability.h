/*
 * A per-key linearizability checker for key-value register histories
 * (header only, for tests).
 *
 * Model: each key is an independent register that is either absent or
 * holds a value (a nonzero u64; 0 encodes "absent").  Every key starts
 * absent.  Operations and the outcomes the model allows:
 *   insert(v)  absent -> OK, holds v;   present -> EEXIST, unchanged
 *   update(v)  present -> OK, holds v;  absent -> ENOENT
 *   upsert(v)  always OK, holds v
 *   delete     present -> OK, absent;   absent -> ENOENT
 *   search     present -> OK with the value held;  absent -> ENOENT
 * Operations that failed with any other error must not be recorded (an
 * error leaves the table unchanged, so such an op is a no-op).
 *
 * A history is linearizable when every key's sub-history is (the
 * P-compositionality of linearizability), so keys are checked apart.  A
 * key's ops are sorted by invocation time; a depth-first search in the
 * style of Wing & Gong with Lowe's memoization picks the next op to
 * linearize among the pending ones that no pending op precedes in real
 * time (op a precedes op b iff a.ret < b.call; equal stamps count as
 * concurrent, which only ever admits more histories) and whose recorded
 * outcome matches the register, and stops at the first complete
 * linearization.  (Set of linearized ops, state) pairs already explored
 * led nowhere and are not explored again, and an op that matches the
 * state without changing it is linearized at once, without branching.  To keep those sets small, the
 * key's ops are cut into segments at quiescent points (every op before
 * the cut responded before any op after it was invoked): all ops of the
 * earlier segments are linearized before any of a later one, so a memo
 * entry holds only its segment's ops.  The search keeps its own stack
 * (no recursion), so a key may have any number of ops.
 *
 * Invariants the caller provides: written values are nonzero and unique
 * per history (e.g. writer id << 32 | sequence), call <= ret, and stamps
 * of all threads come from one monotonic clock.  The search is bounded
 * (LIN_SEG_MAX ops per segment, LIN_MAX_STATES memo entries and
 * LIN_MEMO_BYTES of memo per key): beyond that the verdict is
 * LIN_UNKNOWN, never a guess.  A segment is long when one op spans many
 * others (e.g. a thread descheduled mid-op); the memo then holds few
 * states but wide ones.  A history that breaks the invariants above
 * (e.g. a value written twice) gets a meaningless verdict, never a crash.
 */
#ifndef SMART_TEST_LINEARIZABILITY_H
#define SMART_TEST_LINEARIZABILITY_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef LIN_SEG_MAX
#define LIN_SEG_MAX (1u << 16) /* ops per segment */
#endif
#ifndef LIN_MAX_STATES
#define LIN_MAX_STATES (1u << 21) /* memo entries per key (~3 s) */
#endif
#ifndef LIN_MEMO_BYTES
#define LIN_MEMO_BYTES (256u << 20) /* memo table bytes per key */
#endif

enum lin_op { LIN_INSERT, LIN_UPDATE, LIN_UPSERT, LIN_DELETE, LIN_SEARCH };
enum lin_res { LIN_R_OK, LIN_R_ENOENT, LIN_R_EEXIST };
enum lin_verdict { LIN_OK = 0, LIN_VIOLATION = 1, LIN_UNKNOWN = 2 };

struct lin_event {
	uint64_t call, ret; /* invocation and response stamps (ns) */
	uint64_t key;
	uint64_t arg; /* value written (insert/update/upsert) */
	uint64_t val; /* value read (search with LIN_R_OK) */
	uint8_t op;   /* enum lin_op */
	uint8_t res;  /* enum lin_res */
};

struct lin_report {
	int verdict;  /* enum lin_verdict */
	uint64_t key; /* the first key that failed (if any) */
	size_t keys, segments, max_segment; /* ops in the longest */
	size_t max_states, total_states;    /* memo entries: per segment
						 * (max) and in all */
};

static inline const char *lin_op_name(unsigned op)
{
	static const char *const n[] = { "insert", "update", "upsert", "delete",
					 "search" };

	return op < 5 ? n[op] : "?";
}

static inline const char *lin_res_name(unsigned res)
{
	static const char *const n[] = { "OK", "ENOENT", "EEXIST" };

	return res < 3 ? n[res] : "?";
}

/* Apply e to register state *s: 1 (and the new state) when the outcome
 * recorded in e is the one the model gives in state *s, else 0. */
static inline int lin_step(const struct lin_event *e, uint64_t *s)
{
	switch (e->op) {
	case LIN_INSERT:
		if (*s)
			return e->res == LIN_R_EEXIST;
		if (e->res != LIN_R_OK)
			return 0;
		*s = e->arg;
		return 1;
	case LIN_UPDATE:
		if (!*s)
			return e->res == LIN_R_ENOENT;
		if (e->res != LIN_R_OK)
			return 0;
		*s = e->arg;
		return 1;
	case LIN_UPSERT:
		if (e->res != LIN_R_OK)
			return 0;
		*s = e->arg;
		return 1;
	case LIN_DELETE:
		if (!*s)
			return e->res == LIN_R_ENOENT;
		if (e->res != LIN_R_OK)
			return 0;
		*s = 0;
		return 1;
	case LIN_SEARCH:
		if (!*s)
			return e->res == LIN_R_ENOENT;
		return e->res == LIN_R_OK && e->val == *s;
	}
	return 0;
}

/* ---- one key: memoized depth-first search over its segments ------------ */

struct lin__seg {
	const struct lin_event *ev;    /* its ops, sorted by call */
	size_t n, done, words, stride; /* stride: u64s per memo entry */
	uint64_t *bits;		       /* linearized ops (current path) */
	uint64_t *memo;		       /* [tag, state, bits...] entries */
	size_t cap, used;
};

/* A search node: the ops of `seg` before `next` were tried from here. */
struct lin__frame {
	size_t seg, next, end; /* candidates: [next, end) */
	size_t chosen;	       /* SIZE_MAX for none */
	uint64_t state, minret;
};

struct lin__key {
	struct lin__seg *seg;
	size_t nseg, reached; /* reached: furthest segment */
	size_t memo_bytes, states, max_states;
	int overflow;
};

static inline uint64_t lin__hash(const uint64_t *bits, size_t words,
				 uint64_t state)
{
	uint64_t h = state * 0x9e3779b97f4a7c15ull ^ 0x51afd7ed558ccd1dull;
	size_t i;

	for (i = 0; i < words; i++) {
		h ^= bits[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
		h *= 0xff51afd7ed558ccdull;
	}
	return (h ^ (h >> 33)) | 1; /* tag 0 marks a free entry */
}

static inline uint64_t *lin__slot(struct lin__seg *s, uint64_t tag,
				  uint64_t state, const uint64_t *bits)
{
	size_t i = (size_t)tag & (s->cap - 1);

	for (;; i = (i + 1) & (s->cap - 1)) {
		uint64_t *e = s->memo + i * s->stride;

		if (!e[0] || (e[0] == tag && e[1] == state &&
			      !memcmp(e + 2, bits, s->words * 8)))
			return e;
	}
}

static inline int lin__grow(struct lin__key *k, struct lin__seg *s)
{
	size_t old_cap = s->cap, i, bytes = old_cap * 2 * s->stride * 8;
	uint64_t *old = s->memo;

	if (k->memo_bytes + bytes > LIN_MEMO_BYTES)
		return -1;
	s->memo = calloc(old_cap * 2 * s->stride, sizeof(uint64_t));
	if (!s->memo) {
		s->memo = old;
		return -1;
	}
	k->memo_bytes += bytes - old_cap * s->stride * 8;
	s->cap = old_cap * 2;
	for (i = 0; i < old_cap; i++) {
		uint64_t *e = old + i * s->stride;

		if (e[0])
			memcpy(lin__slot(s, e[0], e[1], e + 2), e,
			       s->stride * 8);
	}
	free(old);
	return 0;
}

/* 1 when (bits, state) of segment s was reached before (and so led
 * nowhere: the search stops at its first success); otherwise records it.
 * Sets k->overflow (and answers 1) when out of budget. */
static inline int lin__seen(struct lin__key *k, struct lin__seg *s,
			    uint64_t state)
{
	uint64_t tag, *e;

	if (!s->memo) {
		s->cap = 16;
		s->memo = calloc(s->cap * s->stride, sizeof(uint64_t));
		k->memo_bytes += s->cap * s->stride * 8;
		if (!s->memo || k->memo_bytes > LIN_MEMO_BYTES)
			return k->overflow = 1;
	}
	tag = lin__hash(s->bits, s->words, state);
	e = lin__slot(s, tag, state, s->bits);
	if (e[0])
		return 1;
	if (k->states + 1 > k->max_states)
		return k->overflow = 1;
	e[0] = tag;
	e[1] = state;
	memcpy(e + 2, s->bits, s->words * 8);
	s->used++;
	k->states++;
	if (s->used * 2 > s->cap && lin__grow(k, s))
		return k->overflow = 1;
	return 0;
}

#define LIN__DONE(s, i) (((s)->bits[(i) / 64] >> ((i) % 64)) & 1)

/* Set up frame f for (segment, state): 1 when the whole key is
 * linearized, -1 when this node needs no search (seen, or out of
 * budget), 0 when its candidates are to be tried. */
static inline int lin__enter(struct lin__key *k, struct lin__frame *f)
{
	struct lin__seg *s;
	size_t i;

	while (f->seg < k->nseg && k->seg[f->seg].done == k->seg[f->seg].n)
		f->seg++;
	if (f->seg == k->nseg)
		return 1;
	if (f->seg > k->reached)
		k->reached = f->seg;
	s = &k->seg[f->seg];
	if (lin__seen(k, s, f->state))
		return -1;
	for (f->next = 0; LIN__DONE(s, f->next); f->next++)
		;
	/* Candidates: pending ops invoked no later than the earliest pending
	 * response.  Ops are sorted by call, and a later op's ret is >= its
	 * call, so the scan stops at the first call beyond minret. */
	f->minret = UINT64_MAX;
	for (i = f->next; i < s->n && s->ev[i].call <= f->minret; i++)
		if (!LIN__DONE(s, i) && s->ev[i].ret < f->minret)
			f->minret = s->ev[i].ret;
	f->end = i;
	f->chosen = SIZE_MAX;
	/* Partial-order reduction: a candidate that matches the state and
	 * does not change it (a search, a failed op) can go first without
	 * loss of generality (moving it earlier in any linearization breaks
	 * no real-time order, since no pending op precedes it), so it is
	 * the only choice tried. */
	for (i = f->next; i < f->end; i++) {
		uint64_t ns = f->state;

		if (!LIN__DONE(s, i) && lin_step(&s->ev[i], &ns) &&
		    ns == f->state) {
			f->next = i;
			f->end = i + 1;
			break;
		}
	}
	return 0;
}

/* Try the next candidate of frame f: 1 (and child filled in) when one
 * applies, 0 when f has none left. */
static inline int lin__next(struct lin__key *k, struct lin__frame *f,
			    struct lin__frame *child)
{
	struct lin__seg *s = &k->seg[f->seg];
	size_t i;
	uint64_t ns;

	if (f->chosen != SIZE_MAX) { /* undo the last choice */
		s->bits[f->chosen / 64] &= ~(1ull << (f->chosen % 64));
		s->done--;
		f->chosen = SIZE_MAX;
	}
	for (i = f->next; i < f->end; i++) {
		ns = f->state;
		if (LIN__DONE(s, i) || !lin_step(&s->ev[i], &ns))
			continue;
		s->bits[i / 64] |= 1ull << (i % 64);
		s->done++;
		f->chosen = i;
		f->next = i + 1;
		child->seg = f->seg;
		child->state = ns;
		return 1;
	}
	f->next = i;
	return 0;
}

#undef LIN__DONE

/* Depth-first search without recursion (a key may have many thousands of
 * ops): stack[d] is the node at depth d. */
static inline int lin__search(struct lin__key *k, size_t nops)
{
	struct lin__frame *st = calloc(nops + 1, sizeof(*st));
	size_t d = 0;
	int r, v = LIN_VIOLATION;

	if (!st)
		return LIN_UNKNOWN;
	st[0].state = 0; /* every key starts absent */
	r = lin__enter(k, &st[0]);
	for (;;) {
		if (r == 1) {
			v = LIN_OK;
			break;
		}
		if (k->overflow) {
			v = LIN_UNKNOWN;
			break;
		}
		if (r == 0 && lin__next(k, &st[d], &st[d + 1])) {
			r = lin__enter(k, &st[++d]);
			continue;
		}
		if (!d)
			break;
		d--;
		r = 0;
	}
	free(st);
	return v;
}

static inline void lin_dump(FILE *f, const struct lin_event *ev, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		fprintf(f,
			"  [%" PRIu64 ", %" PRIu64 "] key %" PRIu64
			" %s(%#" PRIx64 ") -> %s %#" PRIx64 "\n",
			ev[i].call, ev[i].ret, ev[i].key, lin_op_name(ev[i].op),
			ev[i].arg, lin_res_name(ev[i].res), ev[i].val);
}

/* Cut ev (one key's, sorted by call) into segments at quiescent points;
 * returns their number, 0 when out of memory or a segment is too long. */
static inline size_t lin__cut(const struct lin_event *ev, size_t n,
			      struct lin__seg *seg)
{
	size_t nseg = 0, start = 0, i;
	uint64_t maxret = 0;

	for (i = 0; i <= n; i++) {
		if (i < n && (i == start || ev[i].call <= maxret)) {
			if (ev[i].ret > maxret)
				maxret = ev[i].ret;
			continue;
		}
		seg[nseg].ev = ev + start;
		seg[nseg].n = i - start;
		seg[nseg].words = (i - start + 63) / 64;
		seg[nseg].stride = seg[nseg].words + 2;
		seg[nseg].bits = calloc(seg[nseg].words, sizeof(uint64_t));
		if (!seg[nseg++].bits || i - start > LIN_SEG_MAX)
			return 0;
		start = i;
		if (i < n)
			maxret = ev[i].ret;
	}
	return nseg;
}

/* Check one key's events (all of the same key, sorted by call), giving
 * up after max_states memo entries. */
static inline int lin_check_key(const struct lin_event *ev, size_t n,
				size_t max_states, struct lin_report *rep,
				FILE *dump)
{
	struct lin__key k;
	size_t i;
	int v;

	if (!n)
		return LIN_OK;
	memset(&k, 0, sizeof(k));
	k.max_states = max_states;
	k.seg = calloc(n, sizeof(*k.seg));
	k.nseg = k.seg ? lin__cut(ev, n, k.seg) : 0;
	v = k.nseg ? lin__search(&k, n) : LIN_UNKNOWN;
	for (i = 0; k.seg && i < n && k.seg[i].ev; i++) {
		if (k.seg[i].n > rep->max_segment)
			rep->max_segment = k.seg[i].n;
		if (k.seg[i].used > rep->max_states)
			rep->max_states = k.seg[i].used;
		free(k.seg[i].bits);
		free(k.seg[i].memo);
	}
	rep->segments += k.nseg;
	rep->total_states += k.states;
	if (v != LIN_OK && dump && k.nseg) {
		/* the violation is at or before the furthest segment reached */
		fprintf(dump,
			"linearizability: key %" PRIu64 ": %s; the "
			"search got no further than segment %zu of %zu:\n",
			ev[0].key,
			v == LIN_VIOLATION ? "violation" :
					     "search out of budget",
			k.reached, k.nseg);
		lin_dump(dump, k.seg[k.reached].ev,
			 k.seg[k.reached].n < 200 ? k.seg[k.reached].n : 200);
		if (k.seg[k.reached].n > 200)
			fprintf(dump, "  ... (%zu more)\n",
				k.seg[k.reached].n - 200);
	}
	free(k.seg);
	return v;
}

static inline int lin__cmp(const void *a, const void *b)
{
	const struct lin_event *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->call != y->call)
		return x->call < y->call ? -1 : 1;
	return (x->ret > y->ret) - (x->ret < y->ret);
}

/* Check a whole history (any order; not modified) with a budget of
 * max_states memo entries per key.  Returns the verdict, also in
 * rep->verdict; a failing segment is printed to dump (if any).  A
 * violation anywhere wins over an unknown elsewhere. */
static inline int lin_check_budget(const struct lin_event *ev, size_t n,
				   size_t max_states, struct lin_report *rep,
				   FILE *dump)
{
	struct lin_event *c = malloc((n ? n : 1) * sizeof(*c));
	size_t i, j;
	int v, worst = LIN_OK;

	memset(rep, 0, sizeof(*rep));
	if (!c) {
		rep->verdict = LIN_UNKNOWN;
		return LIN_UNKNOWN;
	}
	memcpy(c, ev, n * sizeof(*c));
	qsort(c, n, sizeof(*c), lin__cmp);
	for (i = 0; i < n; i = j) {
		for (j = i; j < n && c[j].key == c[i].key; j++)
			;
		rep->keys++;
		v = lin_check_key(c + i, j - i, max_states, rep, dump);
		if (v > worst || (v == LIN_VIOLATION && worst != v)) {
			worst = v;
			rep->key = c[i].key;
		}
		if (v == LIN_VIOLATION)
			break;
	}
	free(c);
	rep->verdict = worst;
	return worst;
}

/* lin_check_budget() with the default budget, LIN_MAX_STATES. */
static inline int lin_check(const struct lin_event *ev, size_t n,
			    struct lin_report *rep, FILE *dump)
{
	return lin_check_budget(ev, n, LIN_MAX_STATES, rep, dump);
}

#endif
