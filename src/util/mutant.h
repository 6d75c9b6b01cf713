/*
 * Mutants (docs/design.md §10.4): compile-time switches that each remove one
 * step guarding correctness, so that `make mutants` can prove the tests catch
 * its absence.  A build made with -DSMART_MUTANT=<NAME> (CMake) defines
 * SMART_MUTANT_<NAME>; every other build has all of them 0, and the
 * compiler drops the dead branches, so the guarded code is the code that
 * ships.  The list, with the test that must catch each mutant, is
 * tests/mutants/mutants.txt; each structure's doc lists its own.
 *
 * Use: `if (!SMART_M_<NAME>) guard();` rather than #ifdef, so that the
 * guarded code compiles (and is checked) in every build.
 */
#ifndef SMART_UTIL_MUTANT_H
#define SMART_UTIL_MUTANT_H

#ifdef SMART_MUTANT_RPC_CONFIG_TAIL /* util/config.h (in msg): a config
					 * struct's unknown tail ignored */
#define SMART_M_RPC_CONFIG_TAIL 1
#else
#define SMART_M_RPC_CONFIG_TAIL 0
#endif

#ifdef SMART_MUTANT_RPC_CONFIG_CUT /* util/config.h (in msg): a config
					 * struct_size that ends inside a field
					 * taken */
#define SMART_M_RPC_CONFIG_CUT 1
#else
#define SMART_M_RPC_CONFIG_CUT 0
#endif

#ifdef SMART_MUTANT_RPC_OUT_FULL /* util/config.h (in msg): an output
					 * struct written whole, whatever the
					 * caller's size */
#define SMART_M_RPC_OUT_FULL 1
#else
#define SMART_M_RPC_OUT_FULL 0
#endif

#ifdef SMART_MUTANT_BO_NO_CORO_THROT /* backoff.c: a retry rate above
					   * p_high at C_limit never halves
					   * n_max */
#define SMART_M_BO_NO_CORO_THROT 1
#else
#define SMART_M_BO_NO_CORO_THROT 0
#endif

#ifdef SMART_MUTANT_BO_NMAX_FROM_SLOTS /* backoff.c: n_max cut from and
					      * raised to max_tasks, not the
					      * worker's live tasks */
#define SMART_M_BO_NMAX_FROM_SLOTS 1
#else
#define SMART_M_BO_NMAX_FROM_SLOTS 0
#endif

#ifdef SMART_MUTANT_BO_NMAX_BEFORE_CAP /* backoff.c: below p_low n_max
					      * comes back before C_max is
					      * down to C_0 */
#define SMART_M_BO_NMAX_BEFORE_CAP 1
#else
#define SMART_M_BO_NMAX_BEFORE_CAP 0
#endif

#ifdef SMART_MUTANT_BO_SLEEP_HOLDS_SLOT /* backoff.c: a task waiting out
					    * a backoff keeps its admission
					    * slot */
#define SMART_M_BO_SLEEP_HOLDS_SLOT 1
#else
#define SMART_M_BO_SLEEP_HOLDS_SLOT 0
#endif

#ifdef SMART_MUTANT_THROT_CAP_IGNORED /* throttle.c: the tuner's cap is
					  * never waited for */
#define SMART_M_THROT_CAP_IGNORED 1
#else
#define SMART_M_THROT_CAP_IGNORED 0
#endif

#ifdef SMART_MUTANT_THRD_DB_SHARED /* worker.c: per-thread-db asks no
				       * doorbell of its own */
#define SMART_M_THRD_DB_SHARED 1
#else
#define SMART_M_THRD_DB_SHARED 0
#endif

#ifdef SMART_MUTANT_CREDIT_OVERTAKE /* throttle.c: a task parked for
					    * credits behind a head whose
					    * need is not met is woken first */
#define SMART_M_CREDIT_OVERTAKE 1
#else
#define SMART_M_CREDIT_OVERTAKE 0
#endif

#ifdef SMART_MUTANT_LOG_HANDLER_SKIPPED /* util/log.c (in util):
					 * the application's handler passed
					 * over, the message on stderr */
#define SMART_M_LOG_HANDLER_SKIPPED 1
#else
#define SMART_M_LOG_HANDLER_SKIPPED 0
#endif

#ifdef SMART_MUTANT_OPTS_TECH_TYPO /* options.c: an unknown technique
				     * name ignored, not refused */
#define SMART_M_OPTS_TECH_TYPO 1
#else
#define SMART_M_OPTS_TECH_TYPO 0
#endif

#ifdef SMART_MUTANT_OPTS_NIC_MODEL_LATE /* options.c: a bad nic_model
					 * taken, refused only by the ctx */
#define SMART_M_OPTS_NIC_MODEL_LATE 1
#else
#define SMART_M_OPTS_NIC_MODEL_LATE 0
#endif

#ifdef SMART_MUTANT_EBR_NO_ANNOUNCE /* epoch.c: no announcement WRITE */
#define SMART_M_EBR_NO_ANNOUNCE 1
#else
#define SMART_M_EBR_NO_ANNOUNCE 0
#endif

#ifdef SMART_MUTANT_EBR_NO_GRACE /* epoch.c: free at the first scan */
#define SMART_M_EBR_NO_GRACE 1
#else
#define SMART_M_EBR_NO_GRACE 0
#endif

#ifdef SMART_MUTANT_EBR_NO_TAKEBACK /* epoch.c: dead readers block */
#define SMART_M_EBR_NO_TAKEBACK 1
#else
#define SMART_M_EBR_NO_TAKEBACK 0
#endif

#ifdef SMART_MUTANT_LEASE_NO_SELF_FENCE /* worker.c: no deadline check */
#define SMART_M_LEASE_NO_SELF_FENCE 1
#else
#define SMART_M_LEASE_NO_SELF_FENCE 0
#endif

#ifdef SMART_MUTANT_WORKER_NO_CQ_FAIL /* worker.c: a failed CQ's batches
					 * are left waiting */
#define SMART_M_WORKER_NO_CQ_FAIL 1
#else
#define SMART_M_WORKER_NO_CQ_FAIL 0
#endif

#ifdef SMART_MUTANT_WORKER_REAP_IN_FLIGHT /* worker.c: a retired QP
					      * is freed with WRs of a
					      * busy batch on it */
#define SMART_M_WORKER_REAP_IN_FLIGHT 1
#else
#define SMART_M_WORKER_REAP_IN_FLIGHT 0
#endif

#ifdef SMART_MUTANT_WORKER_REAP_PINNED /* worker.c: a retired QP is freed
					 * while a task waiting for a free
					 * batch or for credits holds it
					 * (t->pinned) */
#define SMART_M_WORKER_REAP_PINNED 1
#else
#define SMART_M_WORKER_REAP_PINNED 0
#endif

#ifdef SMART_MUTANT_WORKER_REAP_KEEPS_CACHE /* worker.c: a QP freed by
					      * group_reap left in the
					      * worker's cache (w->qp) */
#define SMART_M_WORKER_REAP_KEEPS_CACHE 1
#else
#define SMART_M_WORKER_REAP_KEEPS_CACHE 0
#endif

#ifdef SMART_MUTANT_OPS_NO_ROOM_TURN /* ops.c: send-queue room to
					 * whoever runs first */
#define SMART_M_OPS_NO_ROOM_TURN 1
#else
#define SMART_M_OPS_NO_ROOM_TURN 0
#endif

#ifdef SMART_MUTANT_TASK_WAIT_POLLS_HANDLERS /* task.c: a task's wait
						 * polls in place with
						 * messaging pollers on
						 * its worker (handlers
						 * run inside the task) */
#define SMART_M_TASK_WAIT_POLLS_HANDLERS 1
#else
#define SMART_M_TASK_WAIT_POLLS_HANDLERS 0
#endif

#ifdef SMART_MUTANT_SHM_POST1_NO_ROOM /* shm_qp.c: post1 writes the entry
					 * behind the tail of a full send
					 * queue (a WR not yet executed) */
#define SMART_M_SHM_POST1_NO_ROOM 1
#else
#define SMART_M_SHM_POST1_NO_ROOM 0
#endif

#ifdef SMART_MUTANT_SHM_POST1_ANY_QP /* shm_qp.c: post1 posts on a QP that
				       * takes post's general way (not
				       * connected, shared, the model, an
				       * adversarial CQ) */
#define SMART_M_SHM_POST1_ANY_QP 1
#else
#define SMART_M_SHM_POST1_ANY_QP 0
#endif

#ifdef SMART_MUTANT_VERBS_SHARED_POLL_UNLOCKED /* verbs_qp.c: a shared
						* CQ's pollers without
						* turns */
#define SMART_M_VERBS_SHARED_POLL_UNLOCKED 1
#else
#define SMART_M_VERBS_SHARED_POLL_UNLOCKED 0
#endif

#ifdef SMART_MUTANT_VERBS_POST1_ANY_QP /* verbs_qp.c: post1 posts on a
					* shared QP without its lock, or on
					* one not connected */
#define SMART_M_VERBS_POST1_ANY_QP 1
#else
#define SMART_M_VERBS_POST1_ANY_QP 0
#endif

#ifdef SMART_MUTANT_VERBS_POST1_STALE_NEXT /* verbs_qp.c: fill_wr leaves
					    * the WR's next link as the
					    * last post left it (post1,
					    * which does not clear its WR,
					    * posts a chain's second WR
					    * again) */
#define SMART_M_VERBS_POST1_STALE_NEXT 1
#else
#define SMART_M_VERBS_POST1_STALE_NEXT 0
#endif

#ifdef SMART_MUTANT_OPS_FAST_NO_FAIL /* ops.c: an op's common way (op_fast)
				       * queues it without reading the blade's
				       * failure word */
#define SMART_M_OPS_FAST_NO_FAIL 1
#else
#define SMART_M_OPS_FAST_NO_FAIL 0
#endif

#ifdef SMART_MUTANT_OPS_FAST_NO_BOUNDS /* ops.c: an op's common way
					 * (op_fast) queues it without
					 * checking its range against the
					 * blade's size */
#define SMART_M_OPS_FAST_NO_BOUNDS 1
#else
#define SMART_M_OPS_FAST_NO_BOUNDS 0
#endif

#ifdef SMART_MUTANT_SHM_ONE_SIDED_RUN_ANY /* shm_qp.c: the poll runs
					     * every doorbell record the
					     * one-sided way, a SEND's too */
#define SMART_M_SHM_ONE_SIDED_RUN_ANY 1
#else
#define SMART_M_SHM_ONE_SIDED_RUN_ANY 0
#endif

#ifdef SMART_MUTANT_SHM_ONE_SIDED_NO_RING_ROOM /* shm_qp.c: the one-sided
						  * run goes on once the
						  * caller's array is full
						  * and the CQ's ring too */
#define SMART_M_SHM_ONE_SIDED_NO_RING_ROOM 1
#else
#define SMART_M_SHM_ONE_SIDED_NO_RING_ROOM 0
#endif

#ifdef SMART_MUTANT_SHM_FAST_RUN_NO_STOP /* shm_qp.c: the one-sided run's
					 * common part goes on executing
					 * the WRs behind a failed one */
#define SMART_M_SHM_FAST_RUN_NO_STOP 1
#else
#define SMART_M_SHM_FAST_RUN_NO_STOP 0
#endif

#ifdef SMART_MUTANT_SHM_FAST_RUN_NO_ROOM /* shm_qp.c: the one-sided run's
					 * common part taken with more WRs
					 * than the caller's array has
					 * room for */
#define SMART_M_SHM_FAST_RUN_NO_ROOM 1
#else
#define SMART_M_SHM_FAST_RUN_NO_ROOM 0
#endif

#ifdef SMART_MUTANT_OPS_SYNC1_NO_FENCE /* ops.c: the one-WR sync's own
					* way (task_sync1) posts on a fenced
					* ctx */
#define SMART_M_OPS_SYNC1_NO_FENCE 1
#else
#define SMART_M_OPS_SYNC1_NO_FENCE 0
#endif

#ifdef SMART_MUTANT_OPS_SYNC1_NO_BUSY /* ops.c: the one-WR sync's own way
				       * (task_sync1) takes its first batch
				       * while it is still in flight */
#define SMART_M_OPS_SYNC1_NO_BUSY 1
#else
#define SMART_M_OPS_SYNC1_NO_BUSY 0
#endif

/* ops.c: an op and its sync in one call (op_sync_fast) posts on a
 * fenced ctx (to a blade connected after the fence) */
#ifdef SMART_MUTANT_OPS_SYNC_OP_NO_FENCE
#define SMART_M_OPS_SYNC_OP_NO_FENCE 1
#else
#define SMART_M_OPS_SYNC_OP_NO_FENCE 0
#endif

/* ops.c: an op and its sync in one call (op_sync_fast) posts with an
 * announcement to prepend or credits to take (w->sync1_off) */
#ifdef SMART_MUTANT_OPS_SYNC_OP_NO_OFF
#define SMART_M_OPS_SYNC_OP_NO_OFF 1
#else
#define SMART_M_OPS_SYNC_OP_NO_OFF 0
#endif

/* ops.c: an op and its sync in one call (op_sync_fast) posts the op
 * alone while ops queued before it wait in an open chain */
#ifdef SMART_MUTANT_OPS_SYNC_OP_NO_CHAINS
#define SMART_M_OPS_SYNC_OP_NO_CHAINS 1
#else
#define SMART_M_OPS_SYNC_OP_NO_CHAINS 0
#endif

/* ops.c: an op and its sync in one call (op_sync_fast), on the sample's
 * turn, does not measure it: the latency sample of one sync in 16 is
 * never taken */
#ifdef SMART_MUTANT_OPS_SYNC_OP_NO_SAMPLE
#define SMART_M_OPS_SYNC_OP_NO_SAMPLE 1
#else
#define SMART_M_OPS_SYNC_OP_NO_SAMPLE 0
#endif

/* ops.c: an op and its sync in one call (op_sync_fast) takes the cached
 * QP of its private group without reading its broken flag (a QP in error
 * is not replaced: the op is flushed) */
#ifdef SMART_MUTANT_OPS_SYNC_OP_BROKEN_QP
#define SMART_M_OPS_SYNC_OP_BROKEN_QP 1
#else
#define SMART_M_OPS_SYNC_OP_BROKEN_QP 0
#endif

/* ops.c: an op and its sync in one call (op_sync_fast) does not record
 * its blade as the task's last (ConflictAvoid's backoff unit is then
 * another blade's round trip) */
#ifdef SMART_MUTANT_OPS_SYNC_OP_NO_BLADE
#define SMART_M_OPS_SYNC_OP_NO_BLADE 1
#else
#define SMART_M_OPS_SYNC_OP_NO_BLADE 0
#endif

/* ctx.c: a fenced ctx connects a blade (whose word no fence failed) */
#ifdef SMART_MUTANT_CTX_CONNECT_FENCED_OK
#define SMART_M_CTX_CONNECT_FENCED_OK 1
#else
#define SMART_M_CTX_CONNECT_FENCED_OK 0
#endif

/* ctx.c: a connect that a fence raced leaves its blade's word alone (the
 * fence read the blades before the new one was among them) */
#ifdef SMART_MUTANT_CTX_CONNECT_FENCE_RACE
#define SMART_M_CTX_CONNECT_FENCE_RACE 1
#else
#define SMART_M_CTX_CONNECT_FENCE_RACE 0
#endif

/* ctx.c: a connect looks for a fence before it publishes its blade, not
 * after (a fence between the two reads the blades without it) */
#ifdef SMART_MUTANT_CTX_CONNECT_CHECK_EARLY
#define SMART_M_CTX_CONNECT_CHECK_EARLY 1
#else
#define SMART_M_CTX_CONNECT_CHECK_EARLY 0
#endif

/* ctx.c: the fence says it has begun only after it read the blades (a
 * connect between the two is missed by both) */
#ifdef SMART_MUTANT_CTX_FENCE_NOT_FIRST
#define SMART_M_CTX_FENCE_NOT_FIRST 1
#else
#define SMART_M_CTX_FENCE_NOT_FIRST 0
#endif

/* ops.c: an op and its sync in one call does not count a CAS that found
 * another value (SMART_STAT_CAS_FAILS; deliver counted it, from the
 * atomic's record, before the call took none) */
#ifdef SMART_MUTANT_OPS_SYNC_OP_CAS_UNCOUNTED
#define SMART_M_OPS_SYNC_OP_CAS_UNCOUNTED 1
#else
#define SMART_M_OPS_SYNC_OP_CAS_UNCOUNTED 0
#endif

/* ops.c: an op and its sync in one call whose WR post1 refused (posted
 * in turn, ended by the general sync) takes no atomic's record, so a
 * failed CAS goes uncounted */
#ifdef SMART_MUTANT_OPS_SYNC_OP_TURNED_NO_REC
#define SMART_M_OPS_SYNC_OP_TURNED_NO_REC 1
#else
#define SMART_M_OPS_SYNC_OP_TURNED_NO_REC 0
#endif

/* worker.c: the sample that took a QP's connect starts the blade's
 * round-trip estimate */
#ifdef SMART_MUTANT_RTT_CONNECT_SAMPLED
#define SMART_M_RTT_CONNECT_SAMPLED 1
#else
#define SMART_M_RTT_CONNECT_SAMPLED 0
#endif

/* core.h smart__credit_take1: a sync's own way takes a credit while
 * tasks are parked for credits (it overtakes them) */
/* ops.c op_sync_refused: an op and its sync in one call that leaves the
 * op to the general sync keeps the credit it took (one lost per such op) */
#ifdef SMART_MUTANT_OPS_SYNC_OP_CREDIT_KEPT
#define SMART_M_OPS_SYNC_OP_CREDIT_KEPT 1
#else
#define SMART_M_OPS_SYNC_OP_CREDIT_KEPT 0
#endif

#ifdef SMART_MUTANT_THROT_FAST_OVERTAKE
#define SMART_M_THROT_FAST_OVERTAKE 1
#else
#define SMART_M_THROT_FAST_OVERTAKE 0
#endif

/* core.h smart__credit_take1: a sync's own way takes a credit there is
 * none of (more WRs in flight than the cap) */
#ifdef SMART_MUTANT_THROT_FAST_NO_FLOOR
#define SMART_M_THROT_FAST_NO_FLOOR 1
#else
#define SMART_M_THROT_FAST_NO_FLOOR 0
#endif

/* core.h smart__credit_take1: a sync's own way takes a credit while the
 * tuner's new cap is not yet in the worker's credits */
#ifdef SMART_MUTANT_THROT_FAST_CAP_STALE
#define SMART_M_THROT_FAST_CAP_STALE 1
#else
#define SMART_M_THROT_FAST_CAP_STALE 0
#endif

#ifdef SMART_MUTANT_OPS_SLOT_NO_TURN /* ops.c: a one-WR sync takes the
				       * send-queue slot while a poster waits
				       * for room in turn */
#define SMART_M_OPS_SLOT_NO_TURN 1
#else
#define SMART_M_OPS_SLOT_NO_TURN 0
#endif

#ifdef SMART_MUTANT_SHM_RECV_TRUSTS_LEN /* shm_recv.c: a peer's message
					 * length copied unchecked */
#define SMART_M_SHM_RECV_TRUSTS_LEN 1
#else
#define SMART_M_SHM_RECV_TRUSTS_LEN 0
#endif

#ifdef SMART_MUTANT_SHM_RECV_NO_LKEY_CHECK /* shm_recv.c: a receive's
					 * buffer not checked against its MR */
#define SMART_M_SHM_RECV_NO_LKEY_CHECK 1
#else
#define SMART_M_SHM_RECV_NO_LKEY_CHECK 0
#endif

#ifdef SMART_MUTANT_SHM_RECV_NO_KIND /* shm_recv.c: a WRITE_IMM's receive
					 * reported as a SEND's */
#define SMART_M_SHM_RECV_NO_KIND 1
#else
#define SMART_M_SHM_RECV_NO_KIND 0
#endif

#ifdef SMART_MUTANT_SHM_RECV_UNFAIR /* shm_recv.c: every poll looks at a
					 * CQ's receive queues from the first */
#define SMART_M_SHM_RECV_UNFAIR 1
#else
#define SMART_M_SHM_RECV_UNFAIR 0
#endif

#ifdef SMART_MUTANT_SHM_ARM_IGNORES_BARRIER /* shm_qp.c: an arm whose
					 * membarrier failed says the CQ may
					 * sleep */
#define SMART_M_SHM_ARM_IGNORES_BARRIER 1
#else
#define SMART_M_SHM_ARM_IGNORES_BARRIER 0
#endif

#ifdef SMART_MUTANT_SHM_REGION_NO_SEAL_CHECK /* shm_mem.c: a region
					 * mapped whatever its seals */
#define SMART_M_SHM_REGION_NO_SEAL_CHECK 1
#else
#define SMART_M_SHM_REGION_NO_SEAL_CHECK 0
#endif

#ifdef SMART_MUTANT_SHM_NO_WAKE /* shm_recv.c: a sender never signals an
				 * armed (sleeping) receiver */
#define SMART_M_SHM_NO_WAKE 1
#else
#define SMART_M_SHM_NO_WAKE 0
#endif

#ifdef SMART_MUTANT_SHM_WAKE_ANY_DOMAIN /* shm_recv.c: a peer's wake
					 * socket of any family (UDP) */
#define SMART_M_SHM_WAKE_ANY_DOMAIN 1
#else
#define SMART_M_SHM_WAKE_ANY_DOMAIN 0
#endif

#ifdef SMART_MUTANT_SHM_WAKE_ANY_FD /* shm_recv.c: a peer's wake descriptor
					 * not checked to be a datagram
					 * socket */
#define SMART_M_SHM_WAKE_ANY_FD 1
#else
#define SMART_M_SHM_WAKE_ANY_FD 0
#endif

#ifdef SMART_MUTANT_SHM_WAKE_ANY_PEER /* shm_recv.c: a peer's wake socket
					 * not checked at connect to be
					 * connected to its pair's other end */
#define SMART_M_SHM_WAKE_ANY_PEER 1
#else
#define SMART_M_SHM_WAKE_ANY_PEER 0
#endif

#ifdef SMART_MUTANT_SHM_WAKE_NO_RECHECK /* shm_recv.c: nor before each
					 * wake-up (the peer may reconnect it) */
#define SMART_M_SHM_WAKE_NO_RECHECK 1
#else
#define SMART_M_SHM_WAKE_NO_RECHECK 0
#endif

#ifdef SMART_MUTANT_SHM_PEER_NO_SEAL_CHECK /* shm_recv.c: a peer segment
					 * that can shrink is mapped */
#define SMART_M_SHM_PEER_NO_SEAL_CHECK 1
#else
#define SMART_M_SHM_PEER_NO_SEAL_CHECK 0
#endif

#ifdef SMART_MUTANT_VERBS_LATE_SLOT_LAPS /* verbs.h: a completion behind
					 * head read as the next lap */
#define SMART_M_VERBS_LATE_SLOT_LAPS 1
#else
#define SMART_M_VERBS_LATE_SLOT_LAPS 0
#endif

#ifdef SMART_MUTANT_ALLOC_SPILL_ONCE /* alloc.c: room in a class cache
					 * looked at once, before a spill's
					 * sync let other tasks fill it */
#define SMART_M_ALLOC_SPILL_ONCE 1
#else
#define SMART_M_ALLOC_SPILL_ONCE 0
#endif

#ifdef SMART_MUTANT_LEASE_NO_CATCH_UP /* lease.c: our own word one ahead
					 * (a lost renewal's CAS) fences us */
#define SMART_M_LEASE_NO_CATCH_UP 1
#else
#define SMART_M_LEASE_NO_CATCH_UP 0
#endif

#ifdef SMART_MUTANT_LEASE_SCAN_NO_GROW /* lease.c: the table read never
						 * grows to cover newcomers */
#define SMART_M_LEASE_SCAN_NO_GROW 1
#else
#define SMART_M_LEASE_SCAN_NO_GROW 0
#endif

#ifdef SMART_MUTANT_LEASE_NO_STALE_FENCE /* lease.c: peers never fence */
#define SMART_M_LEASE_NO_STALE_FENCE 1
#else
#define SMART_M_LEASE_NO_STALE_FENCE 0
#endif

#ifdef SMART_MUTANT_BLADE_NO_EOF_FENCE /* blade: a dropped session keeps
					 * its lease until it expires */
#define SMART_M_BLADE_NO_EOF_FENCE 1
#else
#define SMART_M_BLADE_NO_EOF_FENCE 0
#endif

#ifdef SMART_MUTANT_BLADE_FENCE_FIRST /* session.c: a dropped session's
					 * lease fenced before its QPs go */
#define SMART_M_BLADE_FENCE_FIRST 1
#else
#define SMART_M_BLADE_FENCE_FIRST 0
#endif

#ifdef SMART_MUTANT_BLADE_LEASE_ID_RECYCLE /* blade/lease.c: a dead client's
					 * id handed to a newcomer */
#define SMART_M_BLADE_LEASE_ID_RECYCLE 1
#else
#define SMART_M_BLADE_LEASE_ID_RECYCLE 0
#endif

#ifdef SMART_MUTANT_ALLOC_NO_GIVEBACK /* alloc.c: a destroyed worker
					 * keeps what it cached */
#define SMART_M_ALLOC_NO_GIVEBACK 1
#else
#define SMART_M_ALLOC_NO_GIVEBACK 0
#endif

#ifdef SMART_MUTANT_DM_NO_FREE_CHECK /* dm.c: free a run not allocated */
#define SMART_M_DM_NO_FREE_CHECK 1
#else
#define SMART_M_DM_NO_FREE_CHECK 0
#endif

#ifdef SMART_MUTANT_FREELIST_NO_CHECK /* freelist.c: a popped batch node
					 * is trusted */
#define SMART_M_FREELIST_NO_CHECK 1
#else
#define SMART_M_FREELIST_NO_CHECK 0
#endif

#ifdef SMART_MUTANT_BOOT_NO_EVICT /* blade ctl.c: a full table of
					 * unauthenticated peers refuses
					 * newcomers instead of evicting */
#define SMART_M_BOOT_NO_EVICT 1
#else
#define SMART_M_BOOT_NO_EVICT 0
#endif

#ifdef SMART_MUTANT_RPC_NO_WINDOW /* msg/rpc.c: sends ignore the peer's
					 * acks (receiver not ready follows) */
#define SMART_M_RPC_NO_WINDOW 1
#else
#define SMART_M_RPC_NO_WINDOW 0
#endif

#ifdef SMART_MUTANT_RPC_NO_SECRET_CHECK /* msg/peer.c: the dialer's proof
					 * (AUTH) not checked */
#define SMART_M_RPC_NO_SECRET_CHECK 1
#else
#define SMART_M_RPC_NO_SECRET_CHECK 0
#endif

#ifdef SMART_MUTANT_RPC_NO_LISTENER_PROOF /* msg/peer.c: a dialer goes on
					 * without the listener's proof */
#define SMART_M_RPC_NO_LISTENER_PROOF 1
#else
#define SMART_M_RPC_NO_LISTENER_PROOF 0
#endif

#ifdef SMART_MUTANT_RPC_NO_ACCEPT_TAG /* msg/peer.c: a PEER_ACCEPT's tag
					 * not checked */
#define SMART_M_RPC_NO_ACCEPT_TAG 1
#else
#define SMART_M_RPC_NO_ACCEPT_TAG 0
#endif

#ifdef SMART_MUTANT_RPC_NO_REFLECT_CHECK /* msg/peer.c: a HELLO bearing our
					 * own dial's nonce served */
#define SMART_M_RPC_NO_REFLECT_CHECK 1
#else
#define SMART_M_RPC_NO_REFLECT_CHECK 0
#endif

#ifdef SMART_MUTANT_RPC_NO_PEERCRED /* msg/peer.c: shm peers of any uid */
#define SMART_M_RPC_NO_PEERCRED 1
#else
#define SMART_M_RPC_NO_PEERCRED 0
#endif

#ifdef SMART_MUTANT_WIRE_AUTH_NO_ROLE /* wire/auth.c: the CHALLENGE's and
					 * the AUTH's proofs alike */
#define SMART_M_WIRE_AUTH_NO_ROLE 1
#else
#define SMART_M_WIRE_AUTH_NO_ROLE 0
#endif

#ifdef SMART_MUTANT_BOOT_NO_PROOF_CHECK /* blade session.c: a client's AUTH
					 * not checked */
#define SMART_M_BOOT_NO_PROOF_CHECK 1
#else
#define SMART_M_BOOT_NO_PROOF_CHECK 0
#endif

#ifdef SMART_MUTANT_BOOT_NO_SESSION_TAG /* blade session.c: the tags of a
					 * client's frames after the AUTH
					 * not checked */
#define SMART_M_BOOT_NO_SESSION_TAG 1
#else
#define SMART_M_BOOT_NO_SESSION_TAG 0
#endif

#ifdef SMART_MUTANT_CLIENT_NO_SESSION_TAG /* core bootstrap.c: a QP_ACCEPT's
					 * tag not checked */
#define SMART_M_CLIENT_NO_SESSION_TAG 1
#else
#define SMART_M_CLIENT_NO_SESSION_TAG 0
#endif

#ifdef SMART_MUTANT_CLIENT_NO_FD_PROOF /* core bootstrap.c: the region fd
					 * taken without the blade's proof */
#define SMART_M_CLIENT_NO_FD_PROOF 1
#else
#define SMART_M_CLIENT_NO_FD_PROOF 0
#endif

#ifdef SMART_MUTANT_CLIENT_NO_BLADE_PROOF /* core bootstrap.c: a client goes
					 * on without the blade's proof */
#define SMART_M_CLIENT_NO_BLADE_PROOF 1
#else
#define SMART_M_CLIENT_NO_BLADE_PROOF 0
#endif

#ifdef SMART_MUTANT_RPC_KEY_KEPT /* msg/peer.c: a handshake keeps a
					 * pointer to the secret from its
					 * HELLO (freed by a rotation) */
#define SMART_M_RPC_KEY_KEPT 1
#else
#define SMART_M_RPC_KEY_KEPT 0
#endif

#ifdef SMART_MUTANT_RPC_FDS_UNTAGGED /* msg/peer.c: a PEER frame's tag
					 * does not cover its descriptors */
#define SMART_M_RPC_FDS_UNTAGGED 1
#else
#define SMART_M_RPC_FDS_UNTAGGED 0
#endif

#ifdef SMART_MUTANT_RPC_HS_UNBOUNDED /* msg/peer.c: a look at the ready
					 * handshakes between ticks serves up
					 * to 16, not 4 */
#define SMART_M_RPC_HS_UNBOUNDED 1
#else
#define SMART_M_RPC_HS_UNBOUNDED 0
#endif

#ifdef SMART_MUTANT_RPC_FD_LINGER_KEPT /* msg/rpc.c: a peer's descriptor
					 * closed as it is, its SO_LINGER
					 * holding our close(2) */
#define SMART_M_RPC_FD_LINGER_KEPT 1
#else
#define SMART_M_RPC_FD_LINGER_KEPT 0
#endif

#ifdef SMART_MUTANT_BLADE_FDREQ_FDS_DROPPED /* blade/ctl.c: an fd
					      * request read without room
					      * for descriptors, closed with
					      * what it holds (the kernel
					      * drops them in our thread) */
#define SMART_M_BLADE_FDREQ_FDS_DROPPED 1
#else
#define SMART_M_BLADE_FDREQ_FDS_DROPPED 0
#endif

#ifdef SMART_MUTANT_SOCK_DROP_NO_DRAIN /* util/sockio.c: a unix socket a
					 * peer passed closed with what is
					 * queued in it (descriptors dropped
					 * by the kernel, in our thread) */
#define SMART_M_SOCK_DROP_NO_DRAIN 1
#else
#define SMART_M_SOCK_DROP_NO_DRAIN 0
#endif

#ifdef SMART_MUTANT_SHM_PEER_FD_LINGER_KEPT /* transport/shm: a descriptor
					     * a peer passed (segment, wake
					     * socket, region) closed as it
					     * is, its SO_LINGER holding us */
#define SMART_M_SHM_PEER_FD_LINGER_KEPT 1
#else
#define SMART_M_SHM_PEER_FD_LINGER_KEPT 0
#endif

#ifdef SMART_MUTANT_RPC_CLOSE_UNREAD /* msg/peer.c: a handshake's socket
				       * closed with what it holds unread
				       * (a descriptor queued in it dropped
				       * by the kernel in our thread) */
#define SMART_M_RPC_CLOSE_UNREAD 1
#else
#define SMART_M_RPC_CLOSE_UNREAD 0
#endif

#ifdef SMART_MUTANT_RPC_AHEAD_UNBOUNDED /* msg/peer.c: every HELLO
					   * answered makes a connection
					   * ahead, not one when no spare
					   * is left */
#define SMART_M_RPC_AHEAD_UNBOUNDED 1
#else
#define SMART_M_RPC_AHEAD_UNBOUNDED 0
#endif

#ifdef SMART_MUTANT_RPC_DIAL_SPINS /* msg/peer.c: a dial waiting for the
					 * listener's frame polls without
					 * yielding the CPU */
#define SMART_M_RPC_DIAL_SPINS 1
#else
#define SMART_M_RPC_DIAL_SPINS 0
#endif

#ifdef SMART_MUTANT_RPC_DIAL_BLOCKS /* msg/peer.c: a dial's socket waits
					 * block, the endpoint unpolled */
#define SMART_M_RPC_DIAL_BLOCKS 1
#else
#define SMART_M_RPC_DIAL_BLOCKS 0
#endif

#ifdef SMART_MUTANT_SHM_POST_TOUCHES_CELL /* transport/shm: post_recv
						 * writes each receive's
						 * length into its cell */
#define SMART_M_SHM_POST_TOUCHES_CELL 1
#else
#define SMART_M_SHM_POST_TOUCHES_CELL 0
#endif

#ifdef SMART_MUTANT_RPC_REQ_ALWAYS_LIVE /* msg/rpc.c: smart_rpc_req_check
						 * says every open request's
						 * connection lives */
#define SMART_M_RPC_REQ_ALWAYS_LIVE 1
#else
#define SMART_M_RPC_REQ_ALWAYS_LIVE 0
#endif

#ifdef SMART_MUTANT_RPC_CUT_SILENT /* msg/rpc.c: a connection we cut for
					 * a protocol error is not told (no
					 * CLOSE) */
#define SMART_M_RPC_CUT_SILENT 1
#else
#define SMART_M_RPC_CUT_SILENT 0
#endif

#ifdef SMART_MUTANT_RPC_CLOSE_SERIAL /* msg/rpc.c: destroy waits for each
					 * connection's CLOSE in turn, holding
					 * it across the wait's polls */
#define SMART_M_RPC_CLOSE_SERIAL 1
#else
#define SMART_M_RPC_CLOSE_SERIAL 0
#endif

#ifdef SMART_MUTANT_RPC_DESTROY_DEAD_TWICE /* msg/rpc.c: destroy frees
						 * the table before the dead
						 * list (a connection failed
						 * outside a poll is on both) */
#define SMART_M_RPC_DESTROY_DEAD_TWICE 1
#else
#define SMART_M_RPC_DESTROY_DEAD_TWICE 0
#endif

#ifdef SMART_MUTANT_SHM_DB_FIXED /* transport/shm: a CQ's doorbell FIFO
					 * keeps its first size whatever QPs
					 * join (a post meets it full) */
#define SMART_M_SHM_DB_FIXED 1
#else
#define SMART_M_SHM_DB_FIXED 0
#endif

#ifdef SMART_MUTANT_SHM_PEER_SEG_ANY_SIZE /* transport/shm: a peer's
						 * receive segment mapped up
						 * to what its blob claims
						 * (4 GiB), past SHM_RSEG_MAX */
#define SMART_M_SHM_PEER_SEG_ANY_SIZE 1
#else
#define SMART_M_SHM_PEER_SEG_ANY_SIZE 0
#endif

#ifdef SMART_MUTANT_RPC_CLOSE_FREES_IN_POLL /* msg/rpc.c: a close from
						 * a handler frees the
						 * connection at once */
#define SMART_M_RPC_CLOSE_FREES_IN_POLL 1
#else
#define SMART_M_RPC_CLOSE_FREES_IN_POLL 0
#endif

#ifdef SMART_MUTANT_RPC_NO_KEEPALIVE /* msg/rpc.c: a silent peer is never
					 * declared dead */
#define SMART_M_RPC_NO_KEEPALIVE 1
#else
#define SMART_M_RPC_NO_KEEPALIVE 0
#endif

#ifdef SMART_MUTANT_RPC_NO_RNDV_BOUNDS /* msg/rndv.c: a descriptor is READ
					 * for without checking it lies in
					 * the peer's staging region */
#define SMART_M_RPC_NO_RNDV_BOUNDS 1
#else
#define SMART_M_RPC_NO_RNDV_BOUNDS 0
#endif

#ifdef SMART_MUTANT_RPC_NO_RNDV_CRC /* msg/rndv.c: a READ payload is
					 * delivered without its CRC checked */
#define SMART_M_RPC_NO_RNDV_CRC 1
#else
#define SMART_M_RPC_NO_RNDV_CRC 0
#endif

#ifdef SMART_MUTANT_SHM_STAGE_WRITABLE /* shm_mem.c, verbs_dev.c: a
					 * staging region is not sealed
					 * against writes (shm) or is open
					 * to remote WRITE (verbs) */
#define SMART_M_SHM_STAGE_WRITABLE 1
#else
#define SMART_M_SHM_STAGE_WRITABLE 0
#endif

#ifdef SMART_MUTANT_SHM_RO_WRITES /* shm.h: a WRITE or atomic to a
					 * read-only remote is executed (and
					 * faults: the mapping is PROT_READ) */
#define SMART_M_SHM_RO_WRITES 1
#else
#define SMART_M_SHM_RO_WRITES 0
#endif

#ifdef SMART_MUTANT_RPC_RNDV_NO_SIZE_CHECK /* msg/rndv.c: a peer's staging
					 * region mapped whatever its size */
#define SMART_M_RPC_RNDV_NO_SIZE_CHECK 1
#else
#define SMART_M_RPC_RNDV_NO_SIZE_CHECK 0
#endif

#ifdef SMART_MUTANT_RPC_RNDV_STAGE_REUSED /* msg/rndv.c: a connection's
					 * staging region passes to the next
					 * connection instead of a fresh one */
#define SMART_M_RPC_RNDV_STAGE_REUSED 1
#else
#define SMART_M_RPC_RNDV_STAGE_REUSED 0
#endif

#ifdef SMART_MUTANT_RPC_RNDV_READS_UNSERVED /* msg/rpc.c: a rendezvous
						 * request READ before its
						 * handler is looked up */
#define SMART_M_RPC_RNDV_READS_UNSERVED 1
#else
#define SMART_M_RPC_RNDV_READS_UNSERVED 0
#endif

#ifdef SMART_MUTANT_RPC_NO_REQ_QUOTA /* msg/rpc.c: a connection takes
					 * open requests past its quota */
#define SMART_M_RPC_NO_REQ_QUOTA 1
#else
#define SMART_M_RPC_NO_REQ_QUOTA 0
#endif

#ifdef SMART_MUTANT_RPC_TRUSTS_RECV_KIND /* msg/rpc.c: a receive parsed
					 * as a SEND's whatever consumed it
					 * (a WRITE_IMM's length read from
					 * the slot) */
#define SMART_M_RPC_TRUSTS_RECV_KIND 1
#else
#define SMART_M_RPC_TRUSTS_RECV_KIND 0
#endif

#ifdef SMART_MUTANT_RPC_NO_ROOM_DEADLINE /* msg/rpc.c: a wait for window
					 * room ends only with room or a
					 * failed connection */
#define SMART_M_RPC_NO_ROOM_DEADLINE 1
#else
#define SMART_M_RPC_NO_ROOM_DEADLINE 0
#endif

#ifdef SMART_MUTANT_RPC_NO_PROGRESS_KEEPALIVE /* msg/rpc.c: a peer that
					 * answers PINGs but acks nothing
					 * is kept */
#define SMART_M_RPC_NO_PROGRESS_KEEPALIVE 1
#else
#define SMART_M_RPC_NO_PROGRESS_KEEPALIVE 0
#endif

#ifdef SMART_MUTANT_RPC_TICK_NO_DRAIN /* msg/rpc.c: a tick whose poll found
					 * a full batch gives no keepalive
					 * verdict (a flood keeps them off) */
#define SMART_M_RPC_TICK_NO_DRAIN 1
#else
#define SMART_M_RPC_TICK_NO_DRAIN 0
#endif

#ifdef SMART_MUTANT_WIRE_MSG_TRUSTS_LEN /* wire/msg.c: a message's declared
					 * length believed */
#define SMART_M_WIRE_MSG_TRUSTS_LEN 1
#else
#define SMART_M_WIRE_MSG_TRUSTS_LEN 0
#endif

#ifdef SMART_MUTANT_CTX_BYE_TAINTED /* runtime/ctx.c: a tainted ctx's sessions
					 * end with a BYE (its id reused) */
#define SMART_M_CTX_BYE_TAINTED 1
#else
#define SMART_M_CTX_BYE_TAINTED 0
#endif

#ifdef SMART_MUTANT_STATS_PRINT_UNTERMINATED /* runtime/stats.c: a
						 * caller's snapshot printed
						 * with its strings as they
						 * are (unterminated: read
						 * past the struct) */
#define SMART_M_STATS_PRINT_UNTERMINATED 1
#else
#define SMART_M_STATS_PRINT_UNTERMINATED 0
#endif

#ifdef SMART_MUTANT_CTX_QUERY_ALL_FIELDS /* core/query.c: every field
					 * written, asked for or not */
#define SMART_M_CTX_QUERY_ALL_FIELDS 1
#else
#define SMART_M_CTX_QUERY_ALL_FIELDS 0
#endif

#ifdef SMART_MUTANT_RPC_CHAN_NO_CREDIT /* msg/rpc.c: a channel's reserve takes
					 * a slot without a credit */
#define SMART_M_RPC_CHAN_NO_CREDIT 1
#else
#define SMART_M_RPC_CHAN_NO_CREDIT 0
#endif

#ifdef SMART_MUTANT_RPC_CHAN_ACK_EARLY /* msg/chan.c: a channel slot acked when
					 * taken (next), not when released */
#define SMART_M_RPC_CHAN_ACK_EARLY 1
#else
#define SMART_M_RPC_CHAN_ACK_EARLY 0
#endif

#ifdef SMART_MUTANT_RPC_CHAN_TRUSTS_SLOT /* msg/chan.c: a WRITE_IMM's slot,
					 * length and credit not checked */
#define SMART_M_RPC_CHAN_TRUSTS_SLOT 1
#else
#define SMART_M_RPC_CHAN_TRUSTS_SLOT 0
#endif

#ifdef SMART_MUTANT_RPC_CHAN_TRUSTS_HDR /* msg/chan.c: an IMM slot's header length
					 * not checked against the WRITE's */
#define SMART_M_RPC_CHAN_TRUSTS_HDR 1
#else
#define SMART_M_RPC_CHAN_TRUSTS_HDR 0
#endif

#ifdef SMART_MUTANT_RPC_CHAN_NO_CRC /* msg/chan.c: a FOOTER slot taken without
					 * its CRC (torn slots delivered) */
#define SMART_M_RPC_CHAN_NO_CRC 1
#else
#define SMART_M_RPC_CHAN_NO_CRC 0
#endif

#ifdef SMART_MUTANT_RPC_CHAN_TRUSTS_FOOTER /* msg/chan.c: a FOOTER's seq word and
					 * length taken unchecked */
#define SMART_M_RPC_CHAN_TRUSTS_FOOTER 1
#else
#define SMART_M_RPC_CHAN_TRUSTS_FOOTER 0
#endif

#ifdef SMART_MUTANT_RPC_CHAN_FOOTER_SLEEPS /* msg/event.c: the endpoint
					 * sleeps while it consumes a FOOTER
					 * channel (its slots wake nothing) */
#define SMART_M_RPC_CHAN_FOOTER_SLEEPS 1
#else
#define SMART_M_RPC_CHAN_FOOTER_SLEEPS 0
#endif

#ifdef SMART_MUTANT_RPC_CHAN_TAKES_DATA /* msg/rpc.c: a data message on a channel
					 * handled (it counts as a release) */
#define SMART_M_RPC_CHAN_TAKES_DATA 1
#else
#define SMART_M_RPC_CHAN_TAKES_DATA 0
#endif

#ifdef SMART_MUTANT_RPC_CHAN_UNCOUNTED_GONE /* msg/chan.c: what a channel
					    * does after its connection is
					    * gone left out of the endpoint's
					    * counters */
#define SMART_M_RPC_CHAN_UNCOUNTED_GONE 1
#else
#define SMART_M_RPC_CHAN_UNCOUNTED_GONE 0
#endif

#ifdef SMART_MUTANT_SHM_SIM_RESP_OFF /* transport/sim: WRs run when the
				      * initiator's poll finds them due, not
				      * at their responder time */
#define SMART_M_SHM_SIM_RESP_OFF 1
#else
#define SMART_M_SHM_SIM_RESP_OFF 0
#endif

#ifdef SMART_MUTANT_SHM_SIM_IDLE_ANY_POLL /* transport/sim: the first
					    * empty poll already skips to
					    * the next completion (ready
					    * work after it is delayed) */
#define SMART_M_SHM_SIM_IDLE_ANY_POLL 1
#else
#define SMART_M_SHM_SIM_IDLE_ANY_POLL 0
#endif

#ifdef SMART_MUTANT_SHM_SIM_ANY_THREAD /* transport/sim: a data-path call
					 * from a real thread let through */
#define SMART_M_SHM_SIM_ANY_THREAD 1
#else
#define SMART_M_SHM_SIM_ANY_THREAD 0
#endif

#ifdef SMART_MUTANT_SHM_MODEL_NULL_SPEC /* transport/shm: a NULL model
					  * spec read for its "sim" word */
#define SMART_M_SHM_MODEL_NULL_SPEC 1
#else
#define SMART_M_SHM_MODEL_NULL_SPEC 0
#endif

#ifdef SMART_MUTANT_KEEPER_SIM_THREAD /* services/keeper.c: a simulated
					 * ctx's keeper a real thread */
#define SMART_M_KEEPER_SIM_THREAD 1
#else
#define SMART_M_KEEPER_SIM_THREAD 0
#endif

#ifdef SMART_MUTANT_SHM_MR_CACHE_KEPT /* shm_mem.c: mr_free leaves the
					* QPs' cached local MR (the freed
					* one) in place */
#define SMART_M_SHM_MR_CACHE_KEPT 1
#else
#define SMART_M_SHM_MR_CACHE_KEPT 0
#endif

#ifdef SMART_MUTANT_SHM_DB_GROW_KEPT /* shm_qp.c: a destroyed QP's records
				      * taken out of the FIFO, the newest
				      * record's QP (cq->db_grow) kept */
#define SMART_M_SHM_DB_GROW_KEPT 1
#else
#define SMART_M_SHM_DB_GROW_KEPT 0
#endif

#ifdef SMART_MUTANT_SHM_DB_GROW_REQUEUE /* shm_qp.c: a record requeued
					 * behind the others, the newest
					 * record's QP (cq->db_grow) kept */
#define SMART_M_SHM_DB_GROW_REQUEUE 1
#else
#define SMART_M_SHM_DB_GROW_REQUEUE 0
#endif

#ifdef SMART_MUTANT_SHM_ONE_SIDED_ANY_REGION /* shm.h: a QP of a sealed
					       * region's records run the
					       * one-sided way (no read-only
					       * test) */
#define SMART_M_SHM_ONE_SIDED_ANY_REGION 1
#else
#define SMART_M_SHM_ONE_SIDED_ANY_REGION 0
#endif

#ifdef SMART_MUTANT_SHM_REGION_WRAPS /* shm_mem.c: a region blob whose
				       * base + size wraps the address space
				       * attached */
#define SMART_M_SHM_REGION_WRAPS 1
#else
#define SMART_M_SHM_REGION_WRAPS 0
#endif

#endif
