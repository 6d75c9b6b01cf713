/*
 * TATP (the Telecom Application Transaction Processing benchmark) with
 * FORD's tables, keys and mix on Smart-DTX, shared by `smart-bench tatp`
 * and test_dtx (workload.h).
 *
 * Tables (ids, value bytes): SUBSCRIBER 0 (40), the secondary index
 * SUBSCRIBER by sub_nbr 1 (8: the s_id), ACCESS_INFO 2 (16),
 * SPECIAL_FACILITY 3 (8), CALL_FORWARDING 4 (24).  Keys, as FORD's:
 * s_id; sub_nbr, the s_id's 15 decimal digits 4 bits each (FORD's
 * FastGetSubscribeNumFromSubscribeID); s_id * 4 + ai_type - 1;
 * s_id * 4 + sf_type - 1; (s_id * 4 + sf_type - 1) * 3 + start_time / 8
 * (types 1..4, start times 0, 8, 16, as TATP's).
 *
 * Population (TATP's): subscribers 0..subscribers-1, each 1..4 access
 * infos and 1..4 special facilities of distinct random types, a facility
 * active with 85%, 0..3 call forwardings per facility at distinct start
 * times, an end time 1..8 hours after.  Subscriber ids drawn by TATP's
 * NURand, s_id = ((rand[0, A] | rand[0, N)) mod N), A = 65535 up to 1M
 * subscribers, 1048575 up to 10M, 2097151 beyond (TATP's table; FORD
 * takes the same A).
 *
 * The mix (tp_types, FORD's): GetSubscriberData 35, GetAccessData 35,
 * GetNewDestination 10, UpdateSubscriberData 2, UpdateLocation 14,
 * InsertCallForwarding 2, DeleteCallForwarding 2.  The last three find
 * the s_id through the secondary index first (one more round trip, as
 * FORD).  As FORD, InsertCallForwarding reads the special facility in the
 * same round trip as its insert and inserts whether or not the facility
 * exists (TATP's foreign-key failure is not modelled); its key present
 * (TATP's allowed error) is the "failed" outcome, as is a
 * DeleteCallForwarding that finds none.
 *
 * Invariants: every value starts with a magic derived from its table, its
 * key and the rest of its bytes (a hash), checked on every read and by
 * tp_verify, so a value torn between two versions or read under another
 * key shows; a secondary record's s_id and a subscriber's sub_nbr must
 * match the key's; a record that must exist (a subscriber, its index
 * entry) missing is a bad value.
 */
#ifndef SMART_WORKLOAD_TATP_H
#define SMART_WORKLOAD_TATP_H

#include "workload.h"

enum { TP_SUB, TP_SEC, TP_AI, TP_SF, TP_CF, TP_NTABLES };

enum {
	TP_GET_SUB,
	TP_GET_ACCESS,
	TP_GET_DEST,
	TP_UPD_SUB,
	TP_UPD_LOC,
	TP_INS_CF,
	TP_DEL_CF,
	TP_NTYPES
};

extern const struct wl_type tp_types[TP_NTYPES];
extern const char *const tp_table_names[TP_NTABLES];

struct tp_cfg {
	uint64_t subscribers;
	uint64_t a;    /* NURand's A (tp_prepare) */
	uint64_t seed; /* the population */
};

/* 100 000 subscribers. */
void tp_cfg_init(struct tp_cfg *c);

/* The records the load inserts, counted by generating them (a few
 * hundred ns a subscriber); the tables' buckets: records / 4, rounded
 * up, CALL_FORWARDING sized for half of its 12 keys per subscriber, where
 * inserts and deletes take it. */
void tp_tables(const struct tp_cfg *c, struct smart_dtx_table *t,
	       uint64_t *records);

/* Subscriber u and what belongs to it (at most WL_UNIT_RECS records),
 * from its own stream of c->seed; how many. */
int tp_unit(const struct tp_cfg *c, uint64_t u, struct wl_rec *out);

/* Before drawing: NURand's A; SMART_ENOENT without subscribers. */
int tp_prepare(struct tp_cfg *c);

void tp_gen(const struct tp_cfg *c, smart_rng_t *r, int type,
	    struct wl_params *p);

/* One attempt (workload.h): 0 committed (o filled), SMART_EABORT, or an
 * error. */
int tp_attempt(struct wl_txn *t, int type, const struct wl_params *p,
	       struct wl_outcome *o);

/* The check of one record: 1 right, 0 wrong. */
int tp_verify(uint32_t table, uint64_t key, const void *val, size_t len);

#endif
