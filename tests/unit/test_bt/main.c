/*
 * Smart-BT: semantics of every call, bad arguments, a tree grown to
 * several levels (small nodes), range scans against a model, several
 * workers and tasks at once with a scan checker running beside inserts
 * and deletes (every key present throughout a scan is returned, in order,
 * once; nothing never present is), the same on the adversarial shm
 * transport (torn node reads caught by the CRC: asserted > 0 within up to
 * 8 seeded runs, as they need two threads overlapping), a second
 * ctx opening the tree, and drop giving every byte back; lock tables in
 * device memory.
 *
 * The cases live in files by subject (basics, cost, forged, merge, dead,
 * kept, concurrent; shared helpers in common.c, declared in bt_test.h);
 * this file has the table.
 */
/* the heavy workloads: ctest label stress (tests/harness/test.h) */
#define TEST_STRESS_CASES "concurrent", "adversarial"

#include "bt_test.h"

int main(int argc, char **argv)
{
	return test_main_children(
		argc, argv,
		(struct test_case[]){
			{ "semantics", test_semantics },
			{ "grow_and_scan", test_grow_and_scan },
			{ "round_trips", test_round_trips },
			{ "update_bytes", test_update_bytes },
			{ "corrupt_node", test_corrupt_node },
			{ "torn_node", test_torn_node },
			{ "spec_verify", test_spec_verify },
			{ "parent_is_leaf", test_parent_is_leaf },
			{ "stale_forward", test_stale_forward },
			{ "scan_merge_split", test_scan_merge_split },
			{ "retire_grace", test_retire_grace },
			{ "merge_forged", test_merge_forged },
			{ "foreign_node", test_foreign_node },
			{ "merge_blades", test_merge_blades },
			{ "redo_retire", test_redo_retire },
			{ "close_kept", test_close_kept },
			{ "close_kept_reopen", test_close_kept_reopen },
			{ "kept_retry", test_kept_retry },
			{ "merge_two_takers", test_merge_two_takers },
			{ "merge_unlocked", test_merge_unlocked },
			{ "dead_splitter", test_dead_splitter },
			{ "dead_inner_splitter", test_dead_inner_splitter },
			{ "sep_twice", test_sep_twice },
			{ "scan_ahead", test_scan_ahead },
			{ "older_record", test_older_record },
			{ "dead_holder", test_dead_holder },
			{ "torn_holder", test_torn_holder },
			{ "forged_record", test_forged_record },
			{ "nobody_lock", test_nobody_lock },
			{ "forged_len", test_forged_len },
			{ "adopt_torn", test_adopt_torn },
			{ "named", test_named },
			{ "handover_limit", test_handover_limit },
			{ "bulk", test_bulk },
			{ "shrink", test_shrink },
			{ "stale_root", test_stale_root },
			{ "concurrent", test_concurrent },
			{ "adversarial", test_adversarial },
			{ "drop", test_drop },
			{ "device_locks", test_device_locks },
			{ 0 } },
		(struct test_child[]){
			{ "holder", child_holder },
			{ "torn", child_torn },
			{ "merger", child_merger },
			{ "taker", child_taker },
			{ "taker2", child_taker2 },
			{ "splitter", child_splitter },
			{ "inner_splitter", child_inner_splitter },
			{ "older", child_older },
			{ "kept_reopen", child_kept_reopen },
			{ 0 } });
}
