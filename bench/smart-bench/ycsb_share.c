/*
 * What the processes sharing one named table (--table) agree on, kept in
 * the table itself through the structure's own operations, so that no
 * process needs another channel to the others:
 *
 *   the key space   the creator inserts a record of --keys, --key-size
 *                   and --value-size once its preload is done; a process
 *                   that joins (--no-preload) refuses to run unless its
 *                   flags say the same (its reads would miss keys or fail
 *                   validation), and a missing record means the preload
 *                   is not done (or its creator died in it)
 *   client ids      a process that inserts new keys claims the smallest
 *                   free id by inserting "#smart-bench:client:N": of
 *                   concurrent inserts of one key exactly one succeeds,
 *                   and a claim is never given back, so no two processes,
 *                   live or dead, ever get one id (and so never insert
 *                   the same new key, ycsb.h)
 *
 * Invariant: these keys start with '#', which no YCSB key does, so they
 * never meet the workload's keys.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ycsb.h"

#define SHARE_SPACE_KEY	  "#smart-bench:keyspace"
#define SHARE_CLIENT_FMT  "#smart-bench:client:%d"
#define SHARE_CLIENTS_MAX 100000 /* ids of at most 5 digits */

static void space_render(const struct ycsb *y, char *buf, size_t n)
{
	snprintf(buf, n, "keys=%" PRIu64 " key_size=%d value_size=%d", y->keys,
		 y->key_size, y->value_size);
}

int ycsb_share_publish(struct ycsb *y, smart_worker_t *w)
{
	char val[96];
	int rc;

	space_render(y, val, sizeof(val));
	rc = y->dsi->insert(y->h, w, SHARE_SPACE_KEY,
			    sizeof(SHARE_SPACE_KEY) - 1, val, strlen(val));
	if (rc)
		fprintf(stderr,
			BENCH_TOOL ": --table: recording the key space "
				   "of table %s: %s\n",
			y->table, smart_strerror(rc));
	return rc;
}

int ycsb_share_check(struct ycsb *y, smart_worker_t *w)
{
	char want[96], got[97];
	size_t len = 0;
	int rc;

	rc = y->dsi->search(y->h, w, SHARE_SPACE_KEY,
			    sizeof(SHARE_SPACE_KEY) - 1, got, sizeof(got) - 1,
			    &len);
	if (rc == SMART_ENOENT) {
		fprintf(stderr,
			BENCH_TOOL
			": --no-preload: table %s has no "
			"key space yet: its creator has not finished its "
			"preload (or died in it)\n",
			y->table);
		return rc;
	}
	if (rc) {
		fprintf(stderr,
			BENCH_TOOL ": --no-preload: reading the key "
				   "space of table %s: %s\n",
			y->table, smart_strerror(rc));
		return rc;
	}
	got[len] = 0;
	space_render(y, want, sizeof(want));
	if (strcmp(got, want)) {
		fprintf(stderr,
			BENCH_TOOL
			": --no-preload: table %s holds "
			"%s; this run asks for %s (pass the creator's --keys, "
			"--key-size and --value-size)\n",
			y->table, got, want);
		return SMART_EINVAL;
	}
	return 0;
}

int ycsb_share_claim(struct ycsb *y, smart_worker_t *w)
{
	char key[48];
	int64_t pid = (int64_t)getpid();
	int id, rc = SMART_EEXIST;

	for (id = 0; id < SHARE_CLIENTS_MAX && rc == SMART_EEXIST; id++) {
		snprintf(key, sizeof(key), SHARE_CLIENT_FMT, id);
		rc = y->dsi->insert(y->h, w, key, strlen(key), &pid,
				    sizeof(pid));
	}
	if (rc) {
		fprintf(stderr,
			BENCH_TOOL ": --table: claiming a client id "
				   "in table %s: %s\n",
			y->table,
			smart_strerror(rc == SMART_EEXIST ? SMART_ENOSPC : rc));
		return rc == SMART_EEXIST ? SMART_ENOSPC : rc;
	}
	y->client = id - 1;
	return 0;
}
