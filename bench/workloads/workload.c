/*
 * The workloads' common steps (workload.h): the mix, queueing with the
 * items remembered, exec and commit that release locks on an error, and
 * the check of a value found.  Invariant: t->nitems counts the items the
 * library accepted, so indices 0..nitems-1 are the transaction's items.
 */
#include <string.h>

#include "workload.h"

int wl_type_pick(const struct wl_type *types, int n, smart_rng_t *r)
{
	int x = (int)smart_rng_below(r, 100), i;

	for (i = 0; i < n - 1; i++) {
		if (x < types[i].pct)
			return i;
		x -= types[i].pct;
	}
	return i;
}

int wl_begin(struct wl_txn *t)
{
	t->qerr = 0;
	t->nitems = 0;
	return smart_dtx_begin(t->x);
}

int wl_q(struct wl_txn *t, int item, enum wl_op op, uint32_t table,
	 uint64_t key)
{
	if (item < 0 || item >= WL_ITEMS) {
		if (!t->qerr)
			t->qerr = item < 0 ? item : SMART_ERANGE;
		return item < 0 ? item : SMART_ERANGE;
	}
	t->item[item] = (struct wl_item){ table, op, key };
	if (item >= t->nitems)
		t->nitems = item + 1;
	return item;
}

int wl_read(struct wl_txn *t, int upd, uint32_t table, uint64_t key, int slot)
{
	void *buf = t->buf[slot];

	return wl_q(t,
		    upd ? smart_dtx_read_for_update(t->x, table, key, buf,
						    WL_VAL_MAX) :
			  smart_dtx_read(t->x, table, key, buf, WL_VAL_MAX),
		    upd ? WL_RFU : WL_READ, table, key);
}

static void q_err(struct wl_txn *t, int rc)
{
	if (rc && !t->qerr)
		t->qerr = rc;
}

void wl_write(struct wl_txn *t, int item, int slot, const void *val, size_t len)
{
	memcpy(t->wbuf[slot], val, len);
	q_err(t, smart_dtx_write(t->x, item, t->wbuf[slot], len));
	if (item >= 0 && item < t->nitems)
		t->item[item].op = WL_WRITE;
}

void wl_delete(struct wl_txn *t, int item)
{
	q_err(t, smart_dtx_delete(t->x, item));
	if (item >= 0 && item < t->nitems)
		t->item[item].op = WL_DELETE;
}

/* An error other than an abort may leave locks: release them. */
static int end_bad(struct wl_txn *t, int rc)
{
	if (rc && rc != SMART_EABORT)
		(void)smart_dtx_abort(t->x, t->w);
	return rc;
}

int wl_exec(struct wl_txn *t)
{
	return end_bad(t, t->qerr ? t->qerr : smart_dtx_exec(t->x, t->w));
}

int wl_commit(struct wl_txn *t)
{
	return end_bad(t, t->qerr ? t->qerr : smart_dtx_commit(t->x, t->w));
}

void wl_bad(struct wl_txn *t, uint32_t table, uint64_t key)
{
	if (!t->vfail++) {
		t->bad_table = table;
		t->bad_key = key;
	}
}

int wl_found(struct wl_txn *t, int item, size_t len)
{
	size_t got = 0;
	int rc = smart_dtx_status(t->x, item, &got);

	if (rc == SMART_ENOENT)
		return 0;
	if (rc || got != len) {
		wl_bad(t,
		       item >= 0 && item < t->nitems ? t->item[item].table : 0,
		       item >= 0 && item < t->nitems ? t->item[item].key : 0);
		return -1;
	}
	return 1;
}
