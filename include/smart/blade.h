/** @file
 * Memory blade: a region of memory served to compute processes.
 *
 * The blade allocates and registers its region, formats the superblock,
 * and runs the bootstrap server on one background thread: a TCP listener
 * (loopback by default) speaking the versioned handshake of
 * docs/protocol.md, with a shared-secret check.  Peers that have not shown
 * the secret yet live in a table of their own, capped and bounded in time,
 * whose oldest entry makes room for a newcomer: idle connections, however
 * many, never lock out a client that says HELLO at once, and the blade's
 * sockets stay within max_clients + max_unauth + 64 fd requests + 3 (two
 * listeners and the connection being accepted).
 * After the handshake the
 * blade's CPU takes no part in READ/WRITE/CAS/FAA: the process may even be
 * stopped with SIGSTOP and the ops keep completing.
 *
 * smartd is this API plus option parsing and signal handling; any program
 * can embed a blade in its own process the same way.
 *
 * Thread safety: create/stop/destroy from one thread; the getters from any.
 */
#ifndef SMART_BLADE_H
#define SMART_BLADE_H

#include <stdint.h>
#include <stddef.h>
#include <stdio.h>

#include "smart/secret.h"
#include "smart/usage.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct smart_blade smart_blade_t;

struct smart_blade_config {
	uint32_t struct_size; /**< sizeof, set by the init function:
				 * docs/api.md, "Extensible structs" */
	uint64_t size;	      /**< region bytes, 1 MiB..128 TiB; [1G] */
	const char *listen; /**< "host:port"; port 0 = any; [127.0.0.1:7470] */
	uint16_t id;	    /**< blade id in global addresses, 0..1023; [0] */
	int hugepages;	    /**< -1 auto, 0 off, 1 required; [-1] */
	const char *secret; /**< shared secret bytes, NULL = none required */
	size_t secret_len;  /**< SMART_SECRET_MIN..SMART_SECRET_MAX */
	const char *transport;	  /**< "shm" or "verbs"; NULL = "shm" */
	uint32_t chunk_size;	  /**< allocator chunk, power of two; [1M] */
	int max_clients;	  /**< authenticated sessions at once; a client
				 * beyond is refused SMART_EBUSY; [256] */
	int max_unauth;		  /**< connections not authenticated yet; a new
				 * one evicts the oldest; [128] */
	int auth_timeout_ms;	  /**< time a peer has to prove the secret
				 * (HELLO, AUTH on TCP) or present its fd
				 * request (unix socket); [1000] */
	int handshake_timeout_ms; /**< an authenticated client whose
					 * replies stay unread this long is
					 * dropped; [5000] */
	const char *device; /**< verbs: RDMA device, NULL = auto; [NULL] */
	int ib_port;	    /**< verbs: port, 0 = first active; [0] */
	int gid_index;	    /**< verbs: GID index, -1 = auto; [-1] */
	/* Client lease duration on this blade, ms (docs/leases.md): a client
	 * that has not renewed for this long is declared dead and fenced by
	 * the others.  Every client of the blade uses the blade's value.
	 * [SMART_LEASE_MS_DEFAULT] */
	uint32_t lease_ms;
	/* Device memory served next to the region (smart/alloc.h), bytes:
	 * -1 auto (what the NIC offers, up to SMART_DM_MAX; none where the
	 * transport only emulates it, as shm does), 0 none, else a multiple
	 * of 4096 up to SMART_DM_MAX (256 KiB), which the transport must
	 * give or the blade does not start.  [-1] */
	int64_t dm_size;
	/* verbs fabric settings, used by the blade's responder QPs (the
	 * clients set theirs with the options of the same names):
	 * GRH traffic class, 0..255 (RoCE v2: DSCP << 2 | ECN); [0] */
	int traffic_class;
	int service_level; /**< IB service level / RoCE priority, 0..15; [0] */
	const char *gid_type; /**< "auto", "roce-v2", "roce-v1" or "ib": the
				 * kind of GID; clients must use the same;
				 * NULL = "auto"; [NULL] */
};

#define SMART_LEASE_MS_DEFAULT 2000
/** the range a client checks the blade's lease against too (the library
 * asserts these equal its wire limits) */
#define SMART_LEASE_MS_MIN     10
#define SMART_LEASE_MS_MAX     600000

/** Fill cfg with the defaults in brackets above. */
void smart_blade_config_init(struct smart_blade_config *cfg);

/** Create the region, format it and start serving.  SMART_EINVAL for a bad
 * config (a secret shorter than SMART_SECRET_MIN included), SMART_ENOMEM when the region cannot be had, SMART_ESYS when the
 * address cannot be bound (the log says why).
 * Thread: one thread for create and destroy. */
int smart_blade_create(const struct smart_blade_config *cfg,
		       smart_blade_t **out);

/** Stop serving and free everything; NULL is a no-op.  Returns 0: it
 * cannot fail (no SMART_E* code).  Clients
 * that mapped the region keep their mapping until they disconnect, but
 * learn that the blade is gone (their ops fail, docs/liveness.md).
 * Thread: one thread for create and destroy. */
int smart_blade_destroy(smart_blade_t *b);

/** The address actually listened on ("127.0.0.1:40123" when port 0).
 * Thread: any. */
const char *smart_blade_address(const smart_blade_t *b);

/** The region as mapped in this process (embedded use: inspection, and the
 * --raw yardstick of smart-perf, which accesses it with plain loads).
 * SMART_EINVAL for a NULL argument.  Thread: any. */
int smart_blade_region(const smart_blade_t *b, void **base, uint64_t *size);

/** The blade's id.  Thread: any. */
uint16_t smart_blade_id(const smart_blade_t *b);

/** The region's memory as clients left it (read from this process's own
 * mapping: no client needed).  SMART_EINVAL for NULL.  Thread: any. */
int smart_blade_usage_sized(const smart_blade_t *b,
			    struct smart_alloc_usage *out, size_t size);
static inline int smart_blade_usage(const smart_blade_t *b,
				    struct smart_alloc_usage *out)
{
	return smart_blade_usage_sized(b, out, sizeof(*out));
}

/** Counters of the control plane: totals since creation, then what is open
 * now (authenticated sessions, sessions waiting for a HELLO, connections
 * on the fd socket waiting for a token).  evicted counts both sessions and
 * fd requests dropped to make room for a newer one. */
struct smart_blade_stats {
	uint64_t accepted, authenticated, refused, malformed, timeouts, evicted;
	uint64_t active_sessions, pending_sessions, pending_fd_requests;
};
/** SMART_EINVAL for NULL b or out (out untouched).  Thread: any.  The
 * _sized form takes the caller's sizeof (docs/api.md §4). */
int smart_blade_stats_sized(const smart_blade_t *b,
			    struct smart_blade_stats *out, size_t size);
static inline int smart_blade_stats(const smart_blade_t *b,
				    struct smart_blade_stats *out)
{
	return smart_blade_stats_sized(b, out, sizeof(*out));
}

#ifdef __cplusplus
}
#endif
#endif
