/** @file
 * What a blade's memory is doing (docs/design.md §5.1): readable by any client
 * with smart_alloc_usage() (include/smart/alloc.h) and by the blade's own
 * process with smart_blade_usage() (include/smart/blade.h).  The counters
 * are read while clients run, so they are a snapshot, not a ledger.
 */
#ifndef SMART_USAGE_H
#define SMART_USAGE_H

#include <stdint.h>

struct smart_alloc_usage {
	uint64_t size;	    /**< region bytes */
	uint64_t reserved;  /**< the blade's own area (superblock, tables) */
	uint64_t unclaimed; /**< chunks never handed out */
	uint64_t pooled;    /**< freed, on the blade's free lists */
	uint64_t cached;    /**< freed or carved, held by live clients'
				 * workers for reuse (as they last reported,
				 * at most a lease period old) */
	uint64_t used;	    /**< the rest: allocated, or lost to clients
				 * that died holding it */
	uint64_t free;	    /**< unclaimed + pooled: what any client can
				 * still allocate */
	unsigned clients;   /**< live leases */
	unsigned fenced;    /**< fenced lease words not yet reused */
};

#endif
