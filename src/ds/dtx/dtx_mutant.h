/*
 * Smart-DTX's mutants (docs/design.md §10.4; like src/ds/bt/bt_mutant.h): a
 * build with -DSMART_MUTANT=<NAME> defines SMART_MUTANT_<NAME> and removes that
 * one guard; in every other build each SMART_M_<NAME> is 0.
 * tests/mutants/mutants.txt names the test that must catch each one;
 * docs/dtx.md §7 lists them.
 */
#ifndef SMART_DS_DTX_MUTANT_H
#define SMART_DS_DTX_MUTANT_H

/* read-only records are not re-read at commit (no validation) */
#ifdef SMART_MUTANT_DTX_NO_VALIDATE
#define SMART_M_DTX_NO_VALIDATE 1
#else
#define SMART_M_DTX_NO_VALIDATE 0
#endif

/* an insert that found its key present (SMART_EEXIST) is not
 * validated at commit: the key may be gone by then */
#ifdef SMART_MUTANT_DTX_NO_EEXIST_CHECK
#define SMART_M_DTX_NO_EEXIST_CHECK 1
#else
#define SMART_M_DTX_NO_EEXIST_CHECK 0
#endif

/* a read-for-update takes no lock (its CAS is not issued) */
#ifdef SMART_MUTANT_DTX_NO_LOCK
#define SMART_M_DTX_NO_LOCK 1
#else
#define SMART_M_DTX_NO_LOCK 0
#endif

/* commit writes the records before the undo log */
#ifdef SMART_MUTANT_DTX_LOG_AFTER_COMMIT
#define SMART_M_DTX_LOG_AFTER_COMMIT 1
#else
#define SMART_M_DTX_LOG_AFTER_COMMIT 0
#endif

/* a record's lock is released right behind its primary's write, before
 * its backups (and the other records) are written */
#ifdef SMART_MUTANT_DTX_UNLOCK_EARLY
#define SMART_M_DTX_UNLOCK_EARLY 1
#else
#define SMART_M_DTX_UNLOCK_EARLY 0
#endif

/* commit keeps the record's version */
#ifdef SMART_MUTANT_DTX_NO_VERSION_BUMP
#define SMART_M_DTX_NO_VERSION_BUMP 1
#else
#define SMART_M_DTX_NO_VERSION_BUMP 0
#endif

/* a record is accepted whatever its crc says (torn reads pass) */
#ifdef SMART_MUTANT_DTX_NO_CRC
#define SMART_M_DTX_NO_CRC 1
#else
#define SMART_M_DTX_NO_CRC 0
#endif

/* a lock held by a dead client is waited on like a live one's */
#ifdef SMART_MUTANT_DTX_NO_RECOVERY
#define SMART_M_DTX_NO_RECOVERY 1
#else
#define SMART_M_DTX_NO_RECOVERY 0
#endif

/* a peer's descriptor is trusted for its areas' offsets and sizes */
#ifdef SMART_MUTANT_DTX_NO_DESC_CHECK
#define SMART_M_DTX_NO_DESC_CHECK 1
#else
#define SMART_M_DTX_NO_DESC_CHECK 0
#endif

/* a dead client's log slot is adopted (its log soon overwritten) while a
 * live recoverer still rolls back a record that log lists */
#ifdef SMART_MUTANT_DTX_ADOPT_UNRESOLVED
#define SMART_M_DTX_ADOPT_UNRESOLVED 1
#else
#define SMART_M_DTX_ADOPT_UNRESOLVED 0
#endif

/* a recovery decides (CASes the slot's decision word) even for a log
 * whose transaction no lock names any more: an older log of the slot
 * overwrites the newest transaction's decision */
#ifdef SMART_MUTANT_DTX_DECIDE_SETTLED
#define SMART_M_DTX_DECIDE_SETTLED 1
#else
#define SMART_M_DTX_DECIDE_SETTLED 0
#endif

/* a commit whose writes failed releases every lock even where its undo
 * failed too (the record keeps the aborted transaction's bytes) */
#ifdef SMART_MUTANT_DTX_UNDO_IGNORED
#define SMART_M_DTX_UNDO_IGNORED 1
#else
#define SMART_M_DTX_UNDO_IGNORED 0
#endif

/* recovery counts a torn copy (version new, crc wrong) as new */
#ifdef SMART_MUTANT_DTX_TORN_AS_NEW
#define SMART_M_DTX_TORN_AS_NEW 1
#else
#define SMART_M_DTX_TORN_AS_NEW 0
#endif

/* a recoverer decides from its own evidence even when the decision word
 * holds this transaction's decision */
#ifdef SMART_MUTANT_DTX_IGNORE_DECISION
#define SMART_M_DTX_IGNORE_DECISION 1
#else
#define SMART_M_DTX_IGNORE_DECISION 0
#endif

/* validation of an insert (or of an absent key) ignores a locked record
 * holding the key: another insert's intent */
#ifdef SMART_MUTANT_DTX_NO_INTENT_CHECK
#define SMART_M_DTX_NO_INTENT_CHECK 1
#else
#define SMART_M_DTX_NO_INTENT_CHECK 0
#endif

/* a failed undo's transaction releases the records it did put back
 * (a recoverer then rolls the rest forward over them) */
#ifdef SMART_MUTANT_DTX_RELEASE_PUT_BACK
#define SMART_M_DTX_RELEASE_PUT_BACK 1
#else
#define SMART_M_DTX_RELEASE_PUT_BACK 0
#endif

/* smart_dtx_abort releases a stuck record put back before every other
 * stuck record is put back */
#ifdef SMART_MUTANT_DTX_UNSTICK_EARLY
#define SMART_M_DTX_UNSTICK_EARLY 1
#else
#define SMART_M_DTX_UNSTICK_EARLY 0
#endif

/* freeing a stuck transaction leaves the ctx's BYE on (its locks then
 * name whoever gets its lease id next) */
#ifdef SMART_MUTANT_DTX_NO_TAINT
#define SMART_M_DTX_NO_TAINT 1
#else
#define SMART_M_DTX_NO_TAINT 0
#endif

/* validation takes a slot of our own transaction, its intent not landed
 * yet, for another insert's intent of the key (every transaction
 * inserting two keys of one bucket aborts) */
#ifdef SMART_MUTANT_DTX_OWN_AS_OTHER
#define SMART_M_DTX_OWN_AS_OTHER 1
#else
#define SMART_M_DTX_OWN_AS_OTHER 0
#endif

/* validation reads a read-only record's {lock, key, version} in one
 * 24-byte READ (no order among its words: a write skew) instead of the
 * lock word, a fence, then key and version */
#ifdef SMART_MUTANT_DTX_VALIDATE_ONE_READ
#define SMART_M_DTX_VALIDATE_ONE_READ 1
#else
#define SMART_M_DTX_VALIDATE_ONE_READ 0
#endif

/* a committed transaction's unlocks waited for (the 4th round trip) */
#ifdef SMART_MUTANT_DTX_UNLOCK_WAITED
#define SMART_M_DTX_UNLOCK_WAITED 1
#else
#define SMART_M_DTX_UNLOCK_WAITED 0
#endif

/* an unlock found lost (our stamp still there, on the worker that posted
 * it) is not released again: the lock stays while we live */
#ifdef SMART_MUTANT_DTX_UNLOCK_UNCHECKED
#define SMART_M_DTX_UNLOCK_UNCHECKED 1
#else
#define SMART_M_DTX_UNLOCK_UNCHECKED 0
#endif

/* an unlock whose blade is gone (its check SMART_ECONN) is kept: the
 * object posts no log again */
#ifdef SMART_MUTANT_DTX_UNLOCK_KEEP_DEAD
#define SMART_M_DTX_UNLOCK_KEEP_DEAD 1
#else
#define SMART_M_DTX_UNLOCK_KEEP_DEAD 0
#endif

/* the next undo log posted before the last commit's unlocks are seen
 * landed (a log overwritten while a lock still names it) */
#ifdef SMART_MUTANT_DTX_LOG_BEFORE_UNLOCKED
#define SMART_M_DTX_LOG_BEFORE_UNLOCKED 1
#else
#define SMART_M_DTX_LOG_BEFORE_UNLOCKED 0
#endif

/* a free slot another insert of ours locked (its key word 0 until the
 * intent) taken for an insert of key 0 by a live holder: abort */
#ifdef SMART_MUTANT_DTX_OWN_FREE_AS_BUSY
#define SMART_M_DTX_OWN_FREE_AS_BUSY 1
#else
#define SMART_M_DTX_OWN_FREE_AS_BUSY 0
#endif

/* a second item of a record already queued taken (two inserts of one
 * key in one transaction: two slots hold it) */
#ifdef SMART_MUTANT_DTX_SAME_KEY_TWICE
#define SMART_M_DTX_SAME_KEY_TWICE 1
#else
#define SMART_M_DTX_SAME_KEY_TWICE 0
#endif

/* an insert's commit skips the key word as an update's does (its
 * backups never get the key) */
#ifdef SMART_MUTANT_DTX_INSERT_KEY_KEPT
#define SMART_M_DTX_INSERT_KEY_KEPT 1
#else
#define SMART_M_DTX_INSERT_KEY_KEPT 0
#endif

/* a lost unlock whose worker was destroyed is kept: only the worker that
 * posted it may release it again */
#ifdef SMART_MUTANT_DTX_UNLOCK_GONE_KEPT
#define SMART_M_DTX_UNLOCK_GONE_KEPT 1
#else
#define SMART_M_DTX_UNLOCK_GONE_KEPT 0
#endif

/* an unlock whose READ-back shows our stamp is released again on any
 * worker, also while the one carrying it lives (it may land later) */
#ifdef SMART_MUTANT_DTX_UNLOCK_ANY_WORKER
#define SMART_M_DTX_UNLOCK_ANY_WORKER 1
#else
#define SMART_M_DTX_UNLOCK_ANY_WORKER 0
#endif

/* a commit waits (bounded) for the object's earlier unlocks before it
 * posts its own, also when it wrote nothing */
#ifdef SMART_MUTANT_DTX_UNLOCK_REAP_FIRST
#define SMART_M_DTX_UNLOCK_REAP_FIRST 1
#else
#define SMART_M_DTX_UNLOCK_REAP_FIRST 0
#endif

/* unlocks remembered beside earlier ones with no check that they fit */
#ifdef SMART_MUTANT_DTX_UNLOCK_OVERFLOW
#define SMART_M_DTX_UNLOCK_OVERFLOW 1
#else
#define SMART_M_DTX_UNLOCK_OVERFLOW 0
#endif

/* an object used with a worker of another ctx, whose indexes name other
 * workers and whose WRs our lease does not fence */
#ifdef SMART_MUTANT_DTX_FOREIGN_WORKER
#define SMART_M_DTX_FOREIGN_WORKER 1
#else
#define SMART_M_DTX_FOREIGN_WORKER 0
#endif

/* an object's unlocks not yet seen landed take no hold of the ctx: a
 * ctx destroyed with the object never freed says BYE, and a newcomer may
 * get the ids a lost unlock's lock names */
#ifdef SMART_MUTANT_DTX_UNLOCK_NO_HOLD
#define SMART_M_DTX_UNLOCK_NO_HOLD 1
#else
#define SMART_M_DTX_UNLOCK_NO_HOLD 0
#endif

#endif
