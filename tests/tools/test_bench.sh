#!/usr/bin/env bash
# Smoke tests of smart-bench: tiny YCSB runs on Smart-HT (embedded blade
# and two smartd blades), the shape of the table, JSON and CSV output, and
# the refusals of bad input (exit 2, a clear message).  Runs well under
# 20 s; asserts no timing, only shapes, zero errors and zero validation
# failures.
# Usage: test_bench.sh BIN_DIR
set -u
bin=${1:?usage: test_bench.sh BIN_DIR}
b=$bin/smart-bench
tmp=$(mktemp -d)
pids=()
fail=0
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

check() { # check NAME COMMAND...: must succeed
	if "${@:2}" >"$tmp/out" 2>"$tmp/err"; then echo "ok   $1"; else
		echo "FAIL $1 (status $?)"; cat "$tmp/out" "$tmp/err"; fail=1; fi
}
refuse() { # refuse NAME PATTERN COMMAND...: exit 2, PATTERN on stderr
	"${@:3}" >"$tmp/out" 2>"$tmp/err"; local rc=$?
	if [ $rc -eq 2 ] && grep -qE -- "$2" "$tmp/err"; then
		echo "ok   $1 (refused)"; else
		echo "FAIL $1: status $rc, wanted 2 and '$2'"
		cat "$tmp/out" "$tmp/err"; fail=1; fi
}
has() { # has NAME PATTERN: the last stdout matches
	if grep -qE -- "$2" "$tmp/out"; then echo "ok   $1"; else
		echo "FAIL $1: no '$2' in:"; cat "$tmp/out"; fail=1; fi
}
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
has table-header "workload +#ops +Mops +p50\[us\] +p99\[us\] +p999\[us\] +retries/op +rdma-ops/op +bytes/op +errors"
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
printf 'bench-test-secret-7' >"$tmp/secret"
chmod 600 "$tmp/secret"
addrs=()
for i in 1 2; do
	"$bin/smartd" --size 64M --listen 127.0.0.1:0 --id $i \
		--secret-file "$tmp/secret" >"$tmp/smartd$i.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do grep -q "serving" "$tmp/smartd$i.log" && break; sleep 0.1; done
	addrs+=("$(sed -n 's/.* on \([0-9.]*:[0-9]*\) .*/\1/p' "$tmp/smartd$i.log")")
done
if [ -n "${addrs[0]}" ] && [ -n "${addrs[1]}" ]; then
	check connect-2 "$b" ycsb "${tiny[@]}" --connect "${addrs[0]}" \
		--connect "${addrs[1]}" --secret-file "$tmp/secret" --json
	has connect-2-json '"blades":2,"embedded":false'
	clean connect-2
	# a second run finds the first table's root entry taken and moves on
	check connect-again "$b" ycsb "${tiny[@]}" --connect "${addrs[0]}" \
		--secret-file "$tmp/secret" --workload c
	has connect-root "table at root 17"
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
refuse ds-bt "^smart-bench: --ds: ds bt is not built yet" "$b" ycsb --ds bt
refuse ksize-small "^smart-bench: --key-size: 8 leaves 4 digits: too few for 100000 keys" \
	"$b" ycsb --key-size 8
refuse no-bench "^usage: smart-bench BENCHMARK" "$b"
refuse other-bench "^smart-bench: unknown benchmark .*\('tpcc'\)" "$b" tpcc
refuse stray-arg "^smart-bench: unexpected argument \('x'\)" "$b" ycsb x
# every bad value names its flag and the value, and exits 2
bad() { # bad FLAG VALUE [MORE ARGS...]: smart-bench ycsb --FLAG VALUE
	refuse "bad-$1-$2" "^smart-bench: --$1: .*\('$2'\)$" "$b" ycsb --$1 "$2" "${@:3}"
}
bad workload z
bad ds foo
bad keys 12x
bad keys 0
bad keys -5
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
