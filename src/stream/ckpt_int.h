/*
 * The checkpoint area's layout and access (ckpt_area.c), shared with the
 * executor's checkpoints (ckpt.c); docs/stream.md §11.
 */
#ifndef SMART_STREAM_CKPT_INT_H
#define SMART_STREAM_CKPT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "smart/stream.h"
#include "stream/stream_int.h"

enum { CK_MAGIC = 0x53436b31, CK_SLOTS = 64, CK_DONE = 8 };
#define CK_GEN_MASK ((1ULL << 48) - 1)

struct ck_head {
	uint32_t magic;
	uint32_t crc;	  /* CRC-32C of the head (crc 0), then the entries */
	uint64_t seq;	  /* checkpoint number, from 1 */
	uint64_t owner;	  /* the owner word of its writer */
	uint64_t qsum;	  /* the query and epoch size it was taken with */
	uint64_t epoch;	  /* epochs ended (E > 1: the cut) */
	uint64_t records; /* input records consumed: the replay starts here */
	uint64_t maxts;	  /* the source's largest accepted time */
	uint64_t out_n;	  /* results committed in the log */
	uint64_t filtered, late, implausible, results;
	uint32_t n; /* state entries that follow */
	uint32_t seen;
	uint32_t final; /* E > 1: every source's final epoch is in it */
	uint32_t peers; /* source records before the entries: E or 0 */
	uint64_t spare[2];
};
_Static_assert(sizeof(struct ck_head) == 128, "checkpoint head layout");
_Static_assert(sizeof(struct smart_stream_result) == 40, "log entry layout");
_Static_assert(sizeof(struct stream_entry) == 48, "checkpoint entry layout");

/* E > 1: what the leader knew of source j at the cut (exec's peer[j]). */
struct ck_peer {
	uint64_t epoch, wm;
	uint32_t final, pad;
};
_Static_assert(sizeof(struct ck_peer) == 24, "checkpoint source layout");

/* An area as one worker sees it: the config, the part it works on and a
 * registered buffer of one slot. */
struct ck_area {
	struct smart_stream_ckpt_config c;
	uint64_t slot_bytes, part_bytes;
	uint32_t me;
	uint8_t *buf;
};

/* Each is documented at its definition in ckpt_area.c. */
uint32_t smart__ck_peers_of(const struct smart_stream_ckpt_config *c);
smart_gaddr_t smart__ck_part_addr(const struct ck_area *ar, uint32_t part);
smart_gaddr_t smart__ck_slot_addr(const struct ck_area *ar, uint32_t part,
				  uint64_t i);
smart_gaddr_t smart__ck_log_addr(const struct ck_area *ar, uint64_t i);
int smart__ck_area_open(smart_worker_t *w,
			const struct smart_stream_ckpt_config *in,
			struct ck_area *ar);
int smart__ck_hook_w(smart_worker_t *w, const char *point);
size_t smart__ck_body_len(const struct ck_head *h);
uint32_t smart__ck_head_crc(const struct ck_head *h, const uint8_t *body);
int smart__ck_done_read(smart_worker_t *w, struct ck_area *ar, uint32_t j,
			uint64_t *d);
int smart__ck_dones_min(smart_worker_t *w, struct ck_area *ar, uint64_t *min);
int smart__ck_slot_read(smart_worker_t *w, struct ck_area *ar, uint32_t part,
			uint64_t i, struct ck_head *h);
int smart__ck_best_slot(smart_worker_t *w, struct ck_area *ar, uint32_t part,
			struct ck_head *h);
int smart__ck_take_area(smart_worker_t *w, struct ck_area *ar, uint32_t part,
			uint64_t *owner);
void smart__ck_release(smart_worker_t *w, struct ck_area *ar, uint32_t part,
		       uint64_t *owner);

#endif
