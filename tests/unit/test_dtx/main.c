/*
 * Smart-DTX: the serializability checker (tests/harness/dsg.h) on
 * hand-made histories, every call's semantics and bad arguments, the
 * protocol's round trips counted exactly, and concurrent workloads whose
 * committed transactions must form an acyclic serialization graph.
 *
 * Cases:
 *   dsg          the checker: an acyclic history passes; write skew, the
 *                read-only anomaly, a torn snapshot, a lost update, a
 *                write over an unread version and a version from nowhere
 *                are found; a serial history of 100k transactions passes
 *                fast, and one stale read hidden in it is found;
 *   api          bad configurations and arguments give errors (never a
 *                crash), the calls in the wrong state too; insert, read,
 *                update, delete, abort and scans in one-task
 *                transactions; log slots running out; drop;
 *   insert_zero  an insert of key 0 queued after another insert of the
 *                transaction locked a free slot of its bucket (key word
 *                0, no intent yet): it commits, it does not abort;
 *   insert_twice one key inserted twice by one transaction: the second
 *                refused when queued (SMART_EINVAL), one copy in the table;
 *   eexist       an insert of a present key (SMART_EEXIST) validated
 *                at commit: a delete committed in between aborts it;
 *   dekker       two inserts of one key that took two free slots, both
 *                intents written before either validates: one commits;
 *   skew         write skew through one validation READ whose words the
 *                adversarial shm copies top down with a hook between
 *                them (version before a commit, lock after its unlock):
 *                of two withdrawals that each read the other's account,
 *                one commits;
 *   unlock_lost  a commit's unlocks lost (as a failed QP flushes them):
 *                the record stays locked, the object on another worker
 *                posts no log (SMART_EBUSY), on its own it releases the
 *                lock again;
 *   round_trips  smart_dtx_last_cost() round trips of SmallBank's six
 *                transactions (smart-bench's, bench/workloads/; 2
 *                blades, 1 backup) with warm
 *                caches, and of cold items, an insert, an abort;
 *   smallbank    2 threads x 8 tasks of smart-bench's SmallBank
 *                (bench/workloads/smallbank.h, FORD's mix) on 64
 *                accounts (2 blades, 1 backup), every committed
 *                transaction's item
 *                versions recorded: the graph is acyclic with no lost
 *                update, money is conserved exactly, each account ends at
 *                the version its last commit wrote, every value read is
 *                whole, smart_dtx_check() passes; and the paths were
 *                taken (aborts, lock conflicts, failed validations);
 *   adversarial  the same on the adversarial shm transport, plus a task
 *                writing the two hottest accounts and one reading them
 *                through an object without address cache (bucket reads:
 *                long copies that a write and its unlock land inside), so
 *                that torn reads are common: caught by the CRC, asserted
 *                > 0;
 *   tatp         smart-bench's TATP (bench/workloads/tatp.h) on 32
 *                subscribers with a mix heavy in inserts and deletes of
 *                call forwardings: the graph, every key present iff its
 *                committed inserts outnumber its deletes, values whole
 *                on every read and in every table (a magic over their
 *                bytes), the check.
 *
 * What makes the anomalies each mutant of tests/mutants/mutants.txt lets
 * through common rather than rare: a hook at "dtx.exec.done" (after exec
 * locked and read, before validation) yields the task 0..3 times, so
 * that others commit in between (failed validations); half the Balances
 * are interactive, their two reads in two execs with a wait between them
 * until others committed 1..8 transactions (without validation, an
 * Amalgamate landing there makes a cycle of two); every SmallBank value
 * carries words derived from its balance and key (256 bytes here), so a
 * torn one shows; and the
 * tasks retry an abort after a random backoff (tasks of one worker run
 * in a fixed order: equal waits could replay one conflict forever).
 * Seeds are fixed; what is asserted holds in every interleaving.
 *
 * The cases live in files by subject (dsg, api, anomalies, unlock, cost,
 * smallbank, tatp; shared helpers in common.c, declared in dtx_test.h);
 * this file has the table.
 */
/* the heavy workloads: ctest label stress (tests/harness/test.h) */
#define TEST_STRESS_CASES "smallbank", "adversarial", "tatp"

#include "dtx_test.h"

int main(int argc, char **argv)
{
	return test_main(argc, argv,
			 (struct test_case[]){
				 { "dsg", test_dsg },
				 { "api", test_api },
				 { "eexist", test_eexist },
				 { "insert_zero", test_insert_zero },
				 { "insert_twice", test_insert_twice },
				 { "dekker", test_dekker },
				 { "skew", test_skew },
				 { "unlock_lost", test_unlock_lost },
				 { "unlock_lost_gone", test_unlock_lost_gone },
				 { "unlock_lost_rfu", test_unlock_lost_rfu },
				 { "forged_descriptor",
				   test_forged_descriptor },
				 { "round_trips", test_round_trips },
				 { "smallbank", test_smallbank },
				 { "adversarial", test_adversarial },
				 { "tatp", test_tatp },
				 { 0 } });
}
