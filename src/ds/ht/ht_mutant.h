/*
 * Smart-HT's mutants (docs/design.md §10.4; the core's are in
 * src/util/mutant.h, which this layer may not include): a build with
 * -DSMART_MUTANT=<NAME> defines SMART_MUTANT_<NAME> and removes that one
 * guard of the protocol; in every other build each SMART_M_<NAME> is 0 and
 * the guarded code is the code that ships.  tests/mutants/mutants.txt names
 * the test that must catch each one; docs/ht.md §9 lists them.
 */
#ifndef SMART_DS_HT_MUTANT_H
#define SMART_DS_HT_MUTANT_H

/* op_verify: a miss or a frozen hit is final without checking the canonical entry */
#ifdef SMART_MUTANT_HT_NO_VERIFY
#define SMART_M_HT_NO_VERIFY 1
#else
#define SMART_M_HT_NO_VERIFY 0
#endif

/* operations do not enter the shard's epoch domain (blocks freed under readers) */
#ifdef SMART_MUTANT_HT_NO_EPOCH
#define SMART_M_HT_NO_EPOCH 1
#else
#define SMART_M_HT_NO_EPOCH 0
#endif

/* an insert commits its tentative slot without looking for duplicates */
#ifdef SMART_MUTANT_HT_NO_DUP_CHECK
#define SMART_M_HT_NO_DUP_CHECK 1
#else
#define SMART_M_HT_NO_DUP_CHECK 0
#endif

/* bucket headers are not checked against the cached directory */
#ifdef SMART_MUTANT_HT_NO_HEADER_CHECK
#define SMART_M_HT_NO_HEADER_CHECK 1
#else
#define SMART_M_HT_NO_HEADER_CHECK 0
#endif

/* a split copies slots without freezing them */
#ifdef SMART_MUTANT_HT_NO_FREEZE
#define SMART_M_HT_NO_FREEZE 1
#else
#define SMART_M_HT_NO_FREEZE 0
#endif

/* a split publishes N's canonical entry unlocked (before its aliases) */
#ifdef SMART_MUTANT_HT_CHILD_UNLOCKED
#define SMART_M_HT_CHILD_UNLOCKED 1
#else
#define SMART_M_HT_CHILD_UNLOCKED 0
#endif

/* an undone split restores tentative slots their inserts gave up */
#ifdef SMART_MUTANT_HT_ABORT_KEEPS_TENT
#define SMART_M_HT_ABORT_KEEPS_TENT 1
#else
#define SMART_M_HT_ABORT_KEEPS_TENT 0
#endif

/* a CAS whose sync failed is taken as not done (its block freed) */
#ifdef SMART_MUTANT_HT_UNCERTAIN_FREE
#define SMART_M_HT_UNCERTAIN_FREE 1
#else
#define SMART_M_HT_UNCERTAIN_FREE 0
#endif

/* a dead client's tentative slot is waited for, never cleared */
#ifdef SMART_MUTANT_HT_NO_TENT_RECOVERY
#define SMART_M_HT_NO_TENT_RECOVERY 1
#else
#define SMART_M_HT_NO_TENT_RECOVERY 0
#endif

/* a dead client's split lock is waited for, never taken over */
#ifdef SMART_MUTANT_HT_NO_SPLIT_RECOVERY
#define SMART_M_HT_NO_SPLIT_RECOVERY 1
#else
#define SMART_M_HT_NO_SPLIT_RECOVERY 0
#endif

/* a speculated block is used without finding its slot value in a bucket */
#ifdef SMART_MUTANT_HT_SPEC_NO_CHECK
#define SMART_M_HT_SPEC_NO_CHECK 1
#else
#define SMART_M_HT_SPEC_NO_CHECK 0
#endif

/* a worker of another ctx taken (its leases name our locks) */
#ifdef SMART_MUTANT_HT_FOREIGN_WORKER
#define SMART_M_HT_FOREIGN_WORKER 1
#else
#define SMART_M_HT_FOREIGN_WORKER 0
#endif

#endif
