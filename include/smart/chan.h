/** @file
 * One-sided channels (Slash's RDMA channel, docs/rpc.md §17): a producer
 * streams slots of bytes into a ring in its consumer's memory with
 * one-sided WRITEs; the consumer reads them in place and releases them,
 * which gives the producer its credit back.
 *
 * A channel is a messaging connection of its own (include/smart/rpc.h):
 * the producer dials an endpoint that listens for channels
 * (smart_chan_listen); the consumer registers a ring of slots x
 * slot_bytes for this connection only, exposed to that one producer (on
 * shm its descriptor goes to that process alone; on verbs one MR, one
 * rkey per ring).  The producer reserves the next slot (a credit: at most
 * `slots` slots not yet released by the consumer), writes into it in
 * place, commits it (one WRITE); the consumer takes slots strictly in
 * order (smart_chan_next), reads them in place, releases them in the same
 * order.  No copy on either side beyond the producer's own writes and the
 * transport's one WRITE.
 *
 * Modes: SMART_CHAN_IMM, the WRITE carries an immediate word (WRITE_IMM)
 * whose receive completes after the WRITE landed (correct on every
 * transport); SMART_CHAN_FOOTER, Slash's polled footer: a plain WRITE of
 * the whole slot, the consumer polls its last 8-byte word and checks a
 * CRC-32C over the slot (a WRITE is not promised to land in address
 * order: a mismatch is re-polled, up to the consumer's keepalive bound,
 * then the producer is cut off with SMART_EPROTO).
 *
 * Every value the producer writes is read once and checked before use; a
 * producer that breaks the protocol is cut off (SMART_EPROTO on the
 * consumer's next call, counted in proto_errors).  A dead or stopped peer
 * ends reserve and next with SMART_ECONN within the endpoint's keepalive
 * bound (keepalive_ms x keepalive_misses).
 *
 * Thread safety: every function on the endpoint's worker thread.  Errors:
 * 0 or a negative SMART_E*; an error has no side effect.
 */
#ifndef SMART_CHAN_H
#define SMART_CHAN_H

#include <stddef.h>
#include <stdint.h>
#include "smart/rpc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct smart_chan smart_chan_t;

enum { SMART_CHAN_IMM = 0, SMART_CHAN_FOOTER = 1 };

/** Bytes of a slot that are not the application's: IMM's header, FOOTER's
 * footer (a slot's capacity is slot_bytes minus these). */
#define SMART_CHAN_IMM_HDR    16
#define SMART_CHAN_FOOTER_LEN 24

struct smart_chan_config {
	uint32_t struct_size; /**< sizeof, set by the init function */
	uint32_t slots;	      /**< ring slots = credits: 0 is 8; a power of
				 * two, 2..4096, and at most both endpoints'
				 * window */
	uint32_t slot_bytes;  /**< 0 is 32 KiB; 4 KiB..1 MiB, a multiple
				 * of 64 */
	uint32_t mode;	      /**< SMART_CHAN_IMM (default), _FOOTER */
	uint32_t tag;	      /**< the application's name for the channel,
				 * given to the consumer's accept function */
};

#define SMART_CHAN_CONFIG_INIT .struct_size = sizeof(struct smart_chan_config)

/** Every field zero (its default) and struct_size set.  Cannot fail: void. */
void smart_chan_config_init(struct smart_chan_config *cfg);

/** Producer: a channel to the endpoint listening at hostport (a connection
 * of its own; cfg NULL: defaults).  Waits for the handshake like
 * smart_rpc_connect.  SMART_EINVAL for a field out of range (slots above
 * this endpoint's window too) or inside a handler; the errors of
 * smart_rpc_connect; SMART_EACCES when the listener refuses the channel
 * (it does not listen for channels, or its window is below slots);
 * SMART_EPROTO when its answer is not the channel asked for.  Thread: the
 * endpoint's. */
int smart_chan_open(smart_rpc_t *rpc, const char *hostport,
		    const struct smart_chan_config *cfg, smart_chan_t **out);

/** Consumer: fn runs inside the endpoint's poll for each channel a peer
 * opens, with its tag; the channel is the application's from then on
 * (smart_chan_close).  fn NULL: channels are refused again.  SMART_EINVAL
 * for rpc NULL.  Thread: the endpoint's. */
typedef void (*smart_chan_accept_fn)(smart_chan_t *ch, uint32_t tag, void *arg);
int smart_chan_listen(smart_rpc_t *rpc, smart_chan_accept_fn fn, void *arg);

/** Producer: the next slot, *buf its first byte and *cap how many bytes
 * the application may write there.  Waits for a credit (a task yields,
 * the main context polls) up to the endpoint's timeout_ms; inside a
 * handler or the poll it does not wait: SMART_EAGAIN.  SMART_ECONN when
 * the connection failed (the consumer dead, stopped, or it cut us off),
 * SMART_ETIMEDOUT when no credit came in time, SMART_EBUSY when a slot is
 * already reserved and not committed, SMART_EINVAL on a consumer's
 * channel.  Thread: the endpoint's. */
int smart_chan_reserve(smart_chan_t *ch, void **buf, uint32_t *cap);

/** Producer: send the reserved slot, its first len bytes (<= cap) and the
 * application's word user, with one WRITE.  The WRITE is posted at once;
 * a transport may run it only at a later poll of the endpoint (shm runs
 * a FOOTER's plain WRITE there), so a producer keeps progressing its
 * endpoint (reserve, smart_rpc_progress) until its slots were taken, as
 * after smart_rpc_send.  SMART_EINVAL with no slot
 * reserved or len > cap; SMART_ECONN when the connection failed (the
 * reservation is gone then).  Thread: the endpoint's. */
int smart_chan_commit(smart_chan_t *ch, uint32_t len, uint64_t user);

/** Consumer: the next slot in order, read in place: *buf (len bytes, valid
 * until its release) and the producer's word *user.  Does not wait:
 * SMART_EAGAIN when none has landed (progress the endpoint and ask
 * again).  SMART_ECONN when the producer is gone and every slot that
 * landed was taken, SMART_EPROTO when it was cut off for breaking the
 * protocol, SMART_EINVAL on a producer's channel.  Thread: the endpoint's. */
int smart_chan_next(smart_chan_t *ch, const void **buf, uint32_t *len,
		    uint64_t *user);

/** Consumer: the oldest slot taken by next is done; its credit goes back
 * to the producer (with the next message or a bare ACK).  SMART_EINVAL
 * with no slot taken.  Thread: the endpoint's. */
int smart_chan_release(smart_chan_t *ch);

/** Close the channel and its connection, free it (the consumer's ring
 * too).  NULL: no-op returning 0.  Thread: the endpoint's. */
int smart_chan_close(smart_chan_t *ch);

struct smart_chan_stats {
	uint64_t slots;		/**< committed (producer) or taken (consumer) */
	uint64_t bytes;		/**< their application bytes */
	uint64_t credit_stalls; /**< reserves that found no credit */
	uint64_t torn_repolls;	/**< FOOTER: polls of a slot still landing */
	uint64_t proto_errors;	/**< the producer cut off (0 or 1) */
	uint64_t footer_slots;	/**< of slots, those of a FOOTER channel */
};

/** The channel's counters (they also go into its connection's and the
 * endpoint's smart_rpc_stats, and so into smart-stat).  SMART_EINVAL for
 * NULL.  Thread: the endpoint's. */
int smart_chan_stats_sized(const smart_chan_t *ch, struct smart_chan_stats *out,
			   size_t size);
static inline int smart_chan_stats(const smart_chan_t *ch,
				   struct smart_chan_stats *out)
{
	return smart_chan_stats_sized(ch, out, sizeof(*out));
}

#ifdef __cplusplus
}
#endif
#endif
