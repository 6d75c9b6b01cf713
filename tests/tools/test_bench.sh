#!/usr/bin/env bash
# Smoke tests of smart-bench: tiny YCSB runs on Smart-HT (embedded blade
# and two smartd blades) and Smart-BT (workloads C and E), the shape of the table, JSON and CSV output, the
# round trips per op, a named table shared by processes (--table,
# --no-preload, client ids, the sweep, --drop), a window ended by SIGTERM,
# and the refusals of bad input (exit 2, a clear message).  Runs well
# under 30 s; asserts no timing, only shapes, counts in their protocol's
# range, zero errors and zero validation failures.
# Usage: test_bench.sh BIN_DIR
set -u
bin=${1:?usage: test_bench.sh BIN_DIR}
b=$bin/smart-bench
. "$(dirname "$0")/check-lib.sh"
# clean NAME: the last JSON run had no errors and no validation failures
clean() {
	has "$1-clean" '"errors":0,.*"validation_failures":0,'
}

tiny=(--keys 3000 --seconds 0.2 --threads 2 --coros 4)

check help "$b" ycsb --help
has help-text "--workload"
has help-common "--techniques LIST"
check help-top "$b" --help
has help-top-text "^  ycsb "
check version "$b" --version
has version-text "^smart-bench [0-9]"

check table "$b" ycsb "${tiny[@]}" --workload a
has table-header "workload +#ops +Mops +p50\[us\] +p99\[us\] +p999\[us\] +max\[us\] +retries/op +rdma-ops/op +rt/op +bytes/op +errors"
has table-rt "^ round trips per op: read [0-9.]+, update [0-9.]+; of all ops [0-9.]+, of which the allocator's [0-9.]+$"
has table-row "^ a +[0-9]+ +[0-9.]+ "
has table-valid "validation failures 0"
has table-opts "Techniques +: ThrdAwareAlloc,WorkReqThrot,ConflictAvoid"
grep -q "^preload: 3000 keys in" "$tmp/err" && echo "ok   preload-line" ||
	{ echo "FAIL preload-line"; cat "$tmp/err"; fail=1; }

for w in a b c d f update-only read-only; do
	check "json-$w" "$b" ycsb "${tiny[@]}" --workload $w --json
	has "json-$w-shape" "^\{\"workload\":\"$w\",\"ds\":\"ht\",\"threads\":2,\"coros\":4,\"keys\":3000,.*\"mops\":[0-9.]+,\"p50_us\":[0-9.]+,\"p99_us\":[0-9.]+,\"p999_us\":[0-9.]+,\"retries_per_op\":[0-9.]+,\"rdma_ops_per_op\":[0-9.]+,\"bytes_per_op\":[0-9.]+,"
	clean "json-$w"
done
has json-fields '"techniques":"[A-Za-z,]+","qp_mode_effective":"[a-z:0-9-]+","transport":"shm","nic_model":""'
has json-new-fields '"round_trips_per_op":[0-9.]+,"alloc_round_trips_per_op":[0-9.]+,"rt_read":[0-9.]+,"rt_update":null,"rt_insert":null,"rt_rmw":null,"rt_scan":null,"rt_delete":null,"bytes_read":[0-9.]+,"bytes_update":null,"bytes_insert":null,"bytes_rmw":null,"bytes_scan":null,"bytes_delete":null,"max_us":[0-9.]+,"table":"","joined":false,"client_id":0,"dropped":false,"swept":0,"stop_signal":0,"ht_subtables":[0-9]+,'

# round trips per op: RACE's counts (docs/ht.md: search 2, update and
# insert 3) plus a little for retries; a cached search may take 1
check rt-uniform "$b" ycsb "${tiny[@]}" --uniform --workload a --json \
	--techniques ThrdAwareAlloc,WorkReqThrot,ConflictAvoid
within rt-read-range rt_read 1 3
within rt-update-range rt_update 2.5 4
within rt-all-range round_trips_per_op 1 4
within rt-alloc-range alloc_round_trips_per_op 0 0.5
check rt-insert "$b" ycsb "${tiny[@]}" --workload d --json
within rt-insert-range rt_insert 2.5 4.5
check rt-rmw "$b" ycsb "${tiny[@]}" --workload f --json
within rt-rmw-range rt_rmw 3 7
within max-us-range max_us 0.01 1e9

check sweep "$b" ycsb --keys 3000 --threads 2 --coros 4 --workload sweep --json
has sweep-json '"workload":"sweep",.*"reads":3000,"updates":3000,"inserts":0,.*"swept":3000,'
clean sweep

# SIGTERM ends the window early; the run still reports (and exits 0).
# The files of the checks before go first: bash truncates them in the
# child, and a loaded machine let the loop below find the last check's
# preload line before that and signal a process that had not yet blocked
# its stop signals (killed: status 143)
rm -f "$tmp/out" "$tmp/err"
"$b" ycsb --keys 1000 --seconds 60 --json >"$tmp/out" 2>"$tmp/err" &
bp=$!
pids+=($bp)
# the summary line, not a progress tick: the window has begun (up to 60 s:
# under ASan beside VMs the start alone has taken more than 10)
for _ in $(seq 1200); do
	grep -qE "^preload: [0-9]+ keys in" "$tmp/err" && break
	sleep 0.05
done
kill -TERM $bp
wait $bp
rc=$?
if [ $rc -eq 0 ] && grep -q '"stop_signal":15' "$tmp/out"; then
	echo "ok   sigterm-report"; else
	echo "FAIL sigterm-report: status $rc"; cat "$tmp/out" "$tmp/err"; fail=1; fi

check uniform-none "$b" ycsb "${tiny[@]}" --uniform --techniques None --json
has uniform-dist '"zipf":0.000,"distribution":"uniform"'
has opts-none '"techniques":"None"'
clean uniform
check nic-model "$b" ycsb "${tiny[@]}" --nic-model db_hold_ns=100 --json
has nic-model-json '"nic_model":"db_hold_ns=100"'
clean nic-model
check big-values "$b" ycsb --keys 500 --seconds 0.2 --value-size 200 \
	--key-size 40 --workload f --coros 2 --json
has big-values-json '"key_size":40,"value_size":200,'
clean big-values

check csv-1 "$b" ycsb "${tiny[@]}" --csv "$tmp/runs.csv"
check csv-2 "$b" ycsb "${tiny[@]}" --workload c --csv "$tmp/runs.csv" --json
if [ "$(wc -l <"$tmp/runs.csv")" -eq 3 ] &&
   head -1 "$tmp/runs.csv" | grep -q "^workload,ds,techniques,threads,coros,keys,.*mops" &&
   grep -q "^c,ht,ThrdAwareAlloc+WorkReqThrot+ConflictAvoid" "$tmp/runs.csv"; then
	echo "ok   csv-lines"; else echo "FAIL csv-lines:"; cat "$tmp/runs.csv"; fail=1; fi

# two smartd blades: the table sharded over both
smartds 64M bench-test-secret-7 1 2
if [ -n "${addrs[0]}" ] && [ -n "${addrs[1]}" ]; then
	check connect-2 "$b" ycsb "${tiny[@]}" --connect "${addrs[0]}" \
		--connect "${addrs[1]}" --secret-file "$tmp/secret" --json
	has connect-2-json '"blades":2,"embedded":false'
	clean connect-2
	# a second run finds the first table's root entry taken and moves on
	check connect-again "$b" ycsb "${tiny[@]}" --connect "${addrs[0]}" \
		--secret-file "$tmp/secret" --workload c
	has connect-root "table at root 17"
	# a named table shared by processes: created and preloaded by one,
	# joined by others (each inserting one claims its own client id),
	# checked by a sweep that drops it
	on=(--connect "${addrs[0]}" --secret-file "$tmp/secret" --table t1
	    --keys 3000 --seconds 0.2 --coros 4 --json)
	check table-create "$b" ycsb "${on[@]}" --workload a
	has table-create-json '"table":"t1","joined":false,"client_id":0,"dropped":false,'
	clean table-create
	grep -q "^table t1: preloaded; others may join it" "$tmp/err" &&
		echo "ok   table-preloaded-line" ||
		{ echo "FAIL table-preloaded-line"; cat "$tmp/err"; fail=1; }
	fails table-exists "table t1 exists: join it with --no-preload" \
		"$b" ycsb "${on[@]}"
	check table-join-d "$b" ycsb "${on[@]}" --no-preload --workload d
	has table-join-json '"inserts":[1-9][0-9]*,.*"table":"t1","joined":true,"client_id":0,'
	clean table-join-d
	check table-join-d2 "$b" ycsb "${on[@]}" --no-preload --workload d
	has table-join-client '"joined":true,"client_id":1,'
	clean table-join-d2
	fails table-keyspace "table t1 holds keys=3000 key_size=16 value_size=8; this run asks for keys=3001" \
		"$b" ycsb "${on[@]}" --no-preload --keys 3001
	check table-sweep-drop "$b" ycsb "${on[@]}" --no-preload --workload sweep --drop
	has table-sweep-json '"table":"t1","joined":true,.*"dropped":true,"swept":3000,'
	clean table-sweep
	fails table-gone "there is no table t1 to join" "$b" ycsb "${on[@]}" --no-preload
	# an unnamed table dropped: its root entry is free again
	check drop-unnamed "$b" ycsb "${tiny[@]}" --connect "${addrs[0]}" \
		--secret-file "$tmp/secret" --drop
	has drop-unnamed-root "table at root 18"
	has drop-unnamed-line "^ table dropped: yes"
	check drop-root-again "$b" ycsb "${tiny[@]}" --connect "${addrs[0]}" \
		--secret-file "$tmp/secret" --drop
	has drop-root-reused "table at root 18"
	# a well-formed secret file (16+ bytes, 0600), just not the blade's
	printf 'not-the-blade-secret' >"$tmp/wrong"
	chmod 600 "$tmp/wrong"
	"$b" ycsb --keys 100 --seconds 0.1 --connect "${addrs[0]}" \
		--secret-file "$tmp/wrong" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 1 ] && grep -qi "secret\|auth\|refused\|acces" "$tmp/err"; then
		echo "ok   connect-wrong-secret (failed, 1)"; else
		echo "FAIL connect-wrong-secret: status $rc"; cat "$tmp/err"; fail=1; fi
else
	echo "FAIL smartd did not start:"; cat "$tmp"/smartd*.log; fail=1
fi

refuse workload-e "^smart-bench: --workload: workload e is not supported by ht \(no range scans\)" \
	"$b" ycsb --workload e
# Smart-BT: E's scans are checked key by key (validation failures 0);
# a warm read is one round trip (speculative lookup)
check bt-e "$b" ycsb --ds bt --workload e --keys 3000 --threads 2 --coros 4 \
	--seconds 0.3 --json
clean bt-e
has bt-e-scans '"scans":[1-9][0-9]*,"scanned_entries":[1-9]'
check bt-c "$b" ycsb --ds bt --workload c --keys 3000 --threads 1 --coros 4 \
	--seconds 0.3 --json
clean bt-c
within bt-c-rt rt_read 1 1.2
# ... and reads one entry, not a 1 KiB leaf: bytes per read well under a node
within bt-c-bytes bytes_read 1 200
has bt-c-fields '"cache_hit_rate":[0-9.]+,"spec_hit_rate":[0-9.]+,"lock_handovers":[0-9]+,"remote_lock_retries":[0-9]+,'
# churn: a fixed count of ops (not a time: under load 0.3 s once ran 75
# ops and no merge), inserts and deletes of each task's own keys (every delete must
# find its key: an error otherwise), splits and merges; on both structures
for ds in ht bt; do
	check churn-$ds "$b" ycsb --ds $ds --workload churn --keys 3000 \
		--threads 2 --coros 4 --ops 3000 --json
	clean churn-$ds
	has churn-$ds-mix '"inserts":[1-9][0-9]*,.*"deletes":[1-9]'
done
has churn-bt-merges '"bt_merges":[1-9]'
# a sweep of a tree ends with one scan of it all, in order, every
# preloaded key met once
check bt-sweep "$b" ycsb --ds bt --workload sweep --keys 3000 --threads 1 \
	--coros 4 --json
clean bt-sweep
has bt-sweep-scan '"scanned_entries":3000,'
# the main thread late (a test hook): it finds the sweep done, and must
# count every key of it (the count had been zeroed after the start)
SMART_BENCH_TEST_LATE=1 check bt-sweep-late "$b" ycsb --ds bt \
	--workload sweep --keys 300 --threads 2 --coros 2 --json
has bt-sweep-late-all '"swept":300,'
SMART_BENCH_TEST_LATE=1 check ops-late "$b" ycsb --ds ht --workload a \
	--keys 3000 --ops 2000 --threads 2 --coros 2 --json
has ops-late-all '"ops":2000,'
refuse bt-value "^smart-bench: --value-size: bt takes values of at most 4096 bytes" \
	"$b" ycsb --ds bt --value-size 5000
refuse ksize-small "^smart-bench: --key-size: 8 leaves 4 digits: too few for 100000 keys" \
	"$b" ycsb --key-size 8
refuse no-bench "^usage: smart-bench BENCHMARK" "$b"
refuse other-bench "^smart-bench: unknown benchmark .*\('tpcc'\)" "$b" tpcc
refuse stray-arg "^smart-bench: unexpected argument \('x'\)" "$b" ycsb x
refuse no-preload-alone "^smart-bench: --no-preload: needs --table" \
	"$b" ycsb --no-preload
refuse no-preload-embedded "^smart-bench: --no-preload: needs --connect" \
	"$b" ycsb --no-preload --table t
refuse table-empty "^smart-bench: --table: want a name of 1..47 bytes \(''\)" \
	"$b" ycsb --table ''
refuse table-long "^smart-bench: --table: want a name of 1..47 bytes" \
	"$b" ycsb --table "$(printf 'x%.0s' $(seq 48))"
# every bad value names its flag and the value, and exits 2
bad() { # bad FLAG VALUE [MORE ARGS...]: smart-bench ycsb --FLAG VALUE
	refuse "bad-$1-$2" "^smart-bench: --$1: .*\('$2'\)$" "$b" ycsb --$1 "$2" "${@:3}"
}
bad workload z
bad ds foo
bad keys 12x
bad keys 0
bad keys -5
bad insert-room 0
bad workload sweepy
bad zipf 1.5
bad zipf nan
bad seconds 0
bad seconds 3x
bad threads 0
bad threads 5000
bad coros 5000
bad value-size 4
bad value-size 9000
bad key-size 300
bad blade-size 1K
bad qp-mode sideways --keys 100 --seconds 0.1
bad credit 5000
bad transport ib
bad opt no_such_key=1 --keys 100 --seconds 0.1
bad opt credit=x
refuse unknown-flag "^smart-bench: --frobnicate: unknown" "$b" ycsb --frobnicate
refuse missing-value "^smart-bench: --keys: needs a value" "$b" ycsb --keys
refuse flag-value "^smart-bench: --uniform: takes no value" "$b" ycsb --uniform=1
SMART_QP_MODE=nope "$b" ycsb --keys 100 --seconds 0.1 >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "SMART_QP_MODE" "$tmp/err"; then
	echo "ok   bad-env (refused)"; else
	echo "FAIL bad-env: status $rc"; cat "$tmp/err"; fail=1; fi
[ $fail -eq 0 ] && echo "bench: all passed" || echo "bench: FAILED"
exit $fail
