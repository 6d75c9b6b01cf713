/*
 * Smart-BT's mutants (DESIGN.md §9; like src/ds/ht/ht_mutant.h): a build
 * with -DSMART_MUTANT=<NAME> defines SMART_MUTANT_<NAME> and removes that
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

/* a new object adopts a dead client's redo area while a record in it is
 * still current (its writes lost to their takers) */
#ifdef SMART_MUTANT_BT_ADOPT_DIRTY
#define SMART_M_BT_ADOPT_DIRTY 1
#else
#define SMART_M_BT_ADOPT_DIRTY 0
#endif

#endif
