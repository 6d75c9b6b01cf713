/*
 * Smart-BT's mutants (docs/design.md §10.4; like src/ds/ht/ht_mutant.h): a
 * build with -DSMART_MUTANT=<NAME> defines SMART_MUTANT_<NAME> and removes that
 * one guard; in every other build each SMART_M_<NAME> is 0.
 * tests/mutants/mutants.txt names the test that must catch each one;
 * docs/bt.md lists them.
 */
#ifndef SMART_DS_BT_MUTANT_H
#define SMART_DS_BT_MUTANT_H

/* a node is accepted whatever its CRC says (torn reads pass) */
#ifdef SMART_MUTANT_BT_NO_CRC_CHECK
#define SMART_M_BT_NO_CRC_CHECK 1
#else
#define SMART_M_BT_NO_CRC_CHECK 0
#endif

/* a whole node's lengths are not checked against the tree's maxima */
#ifdef SMART_MUTANT_BT_NO_SANITY
#define SMART_M_BT_NO_SANITY 1
#else
#define SMART_M_BT_NO_SANITY 0
#endif

/* readers do not move right past a node's high fence (B-link rule) */
#ifdef SMART_MUTANT_BT_NO_MOVE_RIGHT
#define SMART_M_BT_NO_MOVE_RIGHT 1
#else
#define SMART_M_BT_NO_MOVE_RIGHT 0
#endif

/* writers take no node lock */
#ifdef SMART_MUTANT_BT_NO_LOCK
#define SMART_M_BT_NO_LOCK 1
#else
#define SMART_M_BT_NO_LOCK 0
#endif

/* a leaf entry read alone is trusted whatever its crc says */
#ifdef SMART_MUTANT_BT_NO_ENT_CRC
#define SMART_M_BT_NO_ENT_CRC 1
#else
#define SMART_M_BT_NO_ENT_CRC 0
#endif

/* a speculative read is trusted without checking it holds our key */
#ifdef SMART_MUTANT_BT_NO_SPEC_KEY
#define SMART_M_BT_NO_SPEC_KEY 1
#else
#define SMART_M_BT_NO_SPEC_KEY 0
#endif

/* a lock held by a dead (fenced) client is never taken over */
#ifdef SMART_MUTANT_BT_NO_TAKEOVER
#define SMART_M_BT_NO_TAKEOVER 1
#else
#define SMART_M_BT_NO_TAKEOVER 0
#endif

/* a process hands a lock over to its own waiters for ever */
#ifdef SMART_MUTANT_BT_NO_HANDOVER_LIMIT
#define SMART_M_BT_NO_HANDOVER_LIMIT 1
#else
#define SMART_M_BT_NO_HANDOVER_LIMIT 0
#endif

/* readers do not follow a dead leaf to the leaf that took its range */
#ifdef SMART_MUTANT_BT_NO_FORWARD
#define SMART_M_BT_NO_FORWARD 1
#else
#define SMART_M_BT_NO_FORWARD 0
#endif

/* a writer locks a covering node of any level (a parent a peer made a
 * leaf gets an internal entry) */
#ifdef SMART_MUTANT_BT_NO_LEVEL_CHECK
#define SMART_M_BT_NO_LEVEL_CHECK 1
#else
#define SMART_M_BT_NO_LEVEL_CHECK 0
#endif

/* a lock taken over from a dead holder is not redone from its record */
#ifdef SMART_MUTANT_BT_NO_REPAIR
#define SMART_M_BT_NO_REPAIR 1
#else
#define SMART_M_BT_NO_REPAIR 0
#endif

/* the redo record is written after the node, not before */
#ifdef SMART_MUTANT_BT_LOG_AFTER
#define SMART_M_BT_LOG_AFTER 1
#else
#define SMART_M_BT_LOG_AFTER 0
#endif

/* a peer's redo record is redone whatever stamps its patches carry */
#ifdef SMART_MUTANT_BT_NO_REC_CHECK
#define SMART_M_BT_NO_REC_CHECK 1
#else
#define SMART_M_BT_NO_REC_CHECK 0
#endif

/* a scan that reached a dead leaf's absorber does not move right past
 * the absorber's high fence (the absorber split since) */
#ifdef SMART_MUTANT_BT_NO_SCAN_RIGHT
#define SMART_M_BT_NO_SCAN_RIGHT 1
#else
#define SMART_M_BT_NO_SCAN_RIGHT 0
#endif

/* a node's crc is not seeded with its tree: another tree's node checks */
#ifdef SMART_MUTANT_BT_NO_TREE_SALT
#define SMART_M_BT_NO_TREE_SALT 1
#else
#define SMART_M_BT_NO_TREE_SALT 0
#endif

/* a dead writer's record spanning blades is redone without checking
 * that it was committed (every copy and stamp landed) */
#ifdef SMART_MUTANT_BT_NO_COMMIT_CHECK
#define SMART_M_BT_NO_COMMIT_CHECK 1
#else
#define SMART_M_BT_NO_COMMIT_CHECK 0
#endif

/* a merge finished by a redo taker does not retire the leaf it killed */
#ifdef SMART_MUTANT_BT_NO_REDO_RETIRE
#define SMART_M_BT_NO_REDO_RETIRE 1
#else
#define SMART_M_BT_NO_REDO_RETIRE 0
#endif

/* a walk that finds a leaf's separator missing from a parent read fresh
 * does not put it in (a dead splitter's stays missing for good) */
#ifdef SMART_MUTANT_BT_NO_SEP_FIX
#define SMART_M_BT_NO_SEP_FIX 1
#else
#define SMART_M_BT_NO_SEP_FIX 0
#endif

/* a separator goes into a parent even when it is there already */
#ifdef SMART_MUTANT_BT_NO_SEP_ONCE
#define SMART_M_BT_NO_SEP_ONCE 1
#else
#define SMART_M_BT_NO_SEP_ONCE 0
#endif

/* a merged-away leaf is freed at once, without the epoch grace (the
 * counterpart of Smart-HT's HT_NO_EPOCH) */
#ifdef SMART_MUTANT_BT_NO_EPOCH_GRACE
#define SMART_M_BT_NO_EPOCH_GRACE 1
#else
#define SMART_M_BT_NO_EPOCH_GRACE 0
#endif

/* a taker redoes the record a dead stamp's record index names without
 * checking that it names that stamp (an older record is redone) */
#ifdef SMART_MUTANT_BT_NO_REC_NAMES
#define SMART_M_BT_NO_REC_NAMES 1
#else
#define SMART_M_BT_NO_REC_NAMES 0
#endif

/* a merge takes in L's sibling without checking it is L's live right
 * neighbour (a dead one, one starting elsewhere) */
#ifdef SMART_MUTANT_BT_NO_RIGHT_CHECK
#define SMART_M_BT_NO_RIGHT_CHECK 1
#else
#define SMART_M_BT_NO_RIGHT_CHECK 0
#endif

/* a merge removes R's entry from the parent without checking that the
 * entry before it names L */
#ifdef SMART_MUTANT_BT_NO_PARENT_CHECK
#define SMART_M_BT_NO_PARENT_CHECK 1
#else
#define SMART_M_BT_NO_PARENT_CHECK 0
#endif

/* a scan takes the leaves it read ahead in the parent's order, without
 * checking each is the one the chain names next and starts at its cursor */
#ifdef SMART_MUTANT_BT_NO_AHEAD_CHECK
#define SMART_M_BT_NO_AHEAD_CHECK 1
#else
#define SMART_M_BT_NO_AHEAD_CHECK 0
#endif

/* a writer waits for the holder of a lock word that names no client */
#ifdef SMART_MUTANT_BT_WAIT_NOBODY
#define SMART_M_BT_WAIT_NOBODY 1
#else
#define SMART_M_BT_WAIT_NOBODY 0
#endif

/* a new object adopts a dead client's redo area while a record in it is
 * still current (its writes lost to their takers) */
#ifdef SMART_MUTANT_BT_ADOPT_DIRTY
#define SMART_M_BT_ADOPT_DIRTY 1
#else
#define SMART_M_BT_ADOPT_DIRTY 0
#endif

/* a redo taker takes the dead holder's words before its own record of
 * the redo landed (dying between the two leaves words naming nothing) */
#ifdef SMART_MUTANT_BT_REDO_CAS_FIRST
#define SMART_M_BT_REDO_CAS_FIRST 1
#else
#define SMART_M_BT_REDO_CAS_FIRST 0
#endif

/* a redo taker's copy of a record as long as the peer's len says (past
 * its patches: the taker's scratch bytes to the blade) */
#ifdef SMART_MUTANT_BT_REDO_PEER_LEN
#define SMART_M_BT_REDO_PEER_LEN 1
#else
#define SMART_M_BT_REDO_PEER_LEN 0
#endif

/* a record kept for the takers leaves the ctx untainted (its BYE gives
 * the lease ids the stamps name to a newcomer: a "live" holder) */
#ifdef SMART_MUTANT_BT_KEPT_NO_TAINT
#define SMART_M_BT_KEPT_NO_TAINT 1
#else
#define SMART_M_BT_KEPT_NO_TAINT 0
#endif

/* a merge's dead leaf retired by a finisher without claiming it (the CAS
 * of its first word): the next finisher retires it again */
#ifdef SMART_MUTANT_BT_NO_DEAD_CLAIM
#define SMART_M_BT_NO_DEAD_CLAIM 1
#else
#define SMART_M_BT_NO_DEAD_CLAIM 0
#endif

/* a finisher retiring a merge's dead leaf while its parent or its left
 * neighbour may still name it (another taker's write in flight) */
#ifdef SMART_MUTANT_BT_DEAD_NO_NAMES
#define SMART_M_BT_DEAD_NO_NAMES 1
#else
#define SMART_M_BT_DEAD_NO_NAMES 0
#endif

/* an adopter of a dead object's area leaving the retires its merges owe */
#ifdef SMART_MUTANT_BT_NO_ADOPT_RETIRE
#define SMART_M_BT_NO_ADOPT_RETIRE 1
#else
#define SMART_M_BT_NO_ADOPT_RETIRE 0
#endif

/* a drop leaving the dead leaves nobody retired (allocated for good) */
#ifdef SMART_MUTANT_BT_NO_DROP_RETIRE
#define SMART_M_BT_NO_DROP_RETIRE 1
#else
#define SMART_M_BT_NO_DROP_RETIRE 0
#endif

/* a walk putting in an internal node's separator it found missing from a
 * parent read fresh (its splitter killed one level up) */
#ifdef SMART_MUTANT_BT_NO_INNER_SEP_FIX
#define SMART_M_BT_NO_INNER_SEP_FIX 1
#else
#define SMART_M_BT_NO_INNER_SEP_FIX 0
#endif

/* a writer whose own write it could not finish keeping the record
 * while its ctx lives on (not fencing it): its words held for good */
#ifdef SMART_MUTANT_BT_KEPT_NO_FENCE
#define SMART_M_BT_KEPT_NO_FENCE 1
#else
#define SMART_M_BT_KEPT_NO_FENCE 0
#endif

/* a writer trying to finish its own failed write once, not again for
 * half a lease (a transient error then fences its ctx) */
#ifdef SMART_MUTANT_BT_FINISH_ONCE
#define SMART_M_BT_FINISH_ONCE 1
#else
#define SMART_M_BT_FINISH_ONCE 0
#endif

/* a release that reported an error fencing the ctx at once, not tried
 * again for half a lease (a transient error stops every structure) */
#ifdef SMART_MUTANT_BT_RELEASE_ONCE
#define SMART_M_BT_RELEASE_ONCE 1
#else
#define SMART_M_BT_RELEASE_ONCE 0
#endif

/* a release lost for half a lease leaving the ctx live: the word names
 * a live holder that never lets go, every writer of the node waits */
#ifdef SMART_MUTANT_BT_RELEASE_NO_FENCE
#define SMART_M_BT_RELEASE_NO_FENCE 1
#else
#define SMART_M_BT_RELEASE_NO_FENCE 0
#endif

/* a trylock taking words with the lock's own stamp: a release retried
 * after it landed frees the lock a merge of ours took meanwhile */
#ifdef SMART_MUTANT_BT_TRY_SAME_STAMP
#define SMART_M_BT_TRY_SAME_STAMP 1
#else
#define SMART_M_BT_TRY_SAME_STAMP 0
#endif

/* a writer finishing its own write taking the words from their stamps
 * to the lock's stamp: a finishing whose release is lost leaves words
 * stamped with nothing to redo, and the next try finds nothing of its */
#ifdef SMART_MUTANT_BT_FINISH_TO_BASE
#define SMART_M_BT_FINISH_TO_BASE 1
#else
#define SMART_M_BT_FINISH_TO_BASE 0
#endif

/* a lock CAS, or a heal's release, that reported an error leaving the
 * word as it may be (taken by us, for good) instead of settling it as a
 * lost release */
#ifdef SMART_MUTANT_BT_LOCK_LOST_KEPT
#define SMART_M_BT_LOCK_LOST_KEPT 1
#else
#define SMART_M_BT_LOCK_LOST_KEPT 0
#endif

/* a worker of another ctx taken (its leases name our locks) */
#ifdef SMART_MUTANT_BT_FOREIGN_WORKER
#define SMART_M_BT_FOREIGN_WORKER 1
#else
#define SMART_M_BT_FOREIGN_WORKER 0
#endif

#endif
