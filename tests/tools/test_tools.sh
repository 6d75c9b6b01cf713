#!/usr/bin/env bash
# Smoke tests of the tools: smartd, smart-ping (a blade's, and --rpc a
# peer endpoint's) and smart-perf as a user runs
# them (exit codes and output shape), plus their refusals of bad input.
# Usage: test_tools.sh BIN_DIR
set -u
bin=${1:?usage: test_tools.sh BIN_DIR}
tmp=$(mktemp -d)
pid=
fail=0
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

check() { # check NAME COMMAND...: must succeed
	if "${@:2}" >"$tmp/out" 2>&1; then echo "ok   $1"; else
		echo "FAIL $1 (status $?)"; cat "$tmp/out"; fail=1; fi
}
refuse() { # refuse NAME COMMAND...: must fail with status 1 or 2, no crash
	"${@:2}" >"$tmp/out" 2>&1; local rc=$?
	if [ $rc -eq 1 ] || [ $rc -eq 2 ]; then echo "ok   $1 (refused, $rc)"; else
		echo "FAIL $1: status $rc"; cat "$tmp/out"; fail=1; fi
}
badflag() { # badflag FLAG COMMAND...: exit 2, "<tool>: --FLAG: why" on output
	"${@:2}" >"$tmp/out" 2>&1; local rc=$? tool=${2##*/}
	if [ $rc -eq 2 ] && grep -qE -- "^$tool: --$1: " "$tmp/out"; then
		echo "ok   $tool-bad-$1 (refused, named)"; else
		echo "FAIL $tool-bad-$1: status $rc, wanted 2 and '$tool: --$1: '"
		cat "$tmp/out"; fail=1; fi
}
has() { # has NAME PATTERN: the last output matches
	if grep -qE "$2" "$tmp/out"; then echo "ok   $1"; else
		echo "FAIL $1: no '$2' in:"; cat "$tmp/out"; fail=1; fi
}

printf 'tools-test-secret-42' >"$tmp/secret"
chmod 600 "$tmp/secret"
"$bin/smartd" --size 64M --listen 127.0.0.1:0 --secret-file "$tmp/secret" \
	>"$tmp/smartd.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "serving" "$tmp/smartd.log" && break; sleep 0.1; done
addr=$(sed -n 's/.* on \([0-9.]*:[0-9]*\) .*/\1/p' "$tmp/smartd.log")
[ -n "$addr" ] || { echo "FAIL smartd did not start:"; cat "$tmp/smartd.log"; exit 1; }

for t in smartd smart-ping smart-perf smart-bench smart-switch-bench; do
	check "help-$t" "$bin/$t" --help
	has "help-$t-usage" "^usage: $t "
	check "version-$t" "$bin/$t" --version
	has "version-$t-text" "^$t [0-9]+\\.[0-9]+"
done
check help-bench-ycsb "$bin/smart-bench" ycsb --help
has help-bench-ycsb-flags "^usage: smart-bench ycsb .*|--workload"
check list-options "$bin/smart-perf" --list-options
has list-options-keys "qp_mode.*nic_model|nic_model"
for op in read write cas faa; do
	check "ping-$op" "$bin/smart-ping" --count 20 --interval 0 --verify \
		--op $op --secret-file "$tmp/secret" "$addr"
	has "ping-$op-summary" "20 probes, 20 ok, 0 failed, data verified"
	has "ping-$op-memory" "^memory: 64\.0 MiB: [0-9.]+ used, [0-9.]+ free"
done
# what the pings took came back: smartd's own view (SIGUSR1)
kill -USR1 "$pid"
for _ in $(seq 50); do grep -q "memory:" "$tmp/smartd.log" && break; sleep 0.1; done
cp "$tmp/smartd.log" "$tmp/out"
has smartd-usr1-memory "^smartd: memory: 64\.0 MiB: 0\.0 used, 63\.0 free .* by 0 clients"
check perf-connect "$bin/smart-perf" --connect "$addr" --secret-file "$tmp/secret" \
	--seconds 0.3 --threads 2 --depth 4 --op faa --json
has perf-json '"op":"faa".*"mops":[0-9.]+.*"p99_us"'
check perf-embedded "$bin/smart-perf" --seconds 0.3 --blade-size 16M
has perf-table "MsgRate\[Mpps\]"
check perf-casincr "$bin/smart-perf" --seconds 0.3 --blade-size 16M --op cas-incr \
	--keys 100 --threads 2 --json
has perf-casincr-json '"retries_per_op":[0-9.]+'
# --rpc: a peer's messaging endpoint (smart-bench rpc --serve), the
# library's echo op; its wrong secret and a blade's probe refused
"$bin/smart-bench" rpc --serve --secret-file "$tmp/secret" >"$tmp/rpc.out" \
	2>"$tmp/rpc.err" &
rpid=$!
for _ in $(seq 100); do [ -s "$tmp/rpc.out" ] && break; sleep 0.05; done
raddr=$(head -1 "$tmp/rpc.out")
check ping-rpc "$bin/smart-ping" --rpc --count 20 --interval 0 --verify \
	--size 100 --secret-file "$tmp/secret" "$raddr"
has ping-rpc-summary "20 probes, 20 ok, 0 failed, data verified"
has ping-rpc-conn "^connection: 20 messages sent, 20 received, .* 0 rnr$"
refuse ping-rpc-wrong-secret "$bin/smart-ping" --rpc --count 1 "$raddr"
refuse ping-rpc-op "$bin/smart-ping" --rpc --op faa --secret-file "$tmp/secret" "$raddr"
kill -TERM $rpid
wait $rpid
refuse ping-wrong-secret "$bin/smart-ping" --count 1 "$addr"
refuse ping-bad-addr "$bin/smart-ping" --count 1 --secret-file "$tmp/secret" "127.0.0.1:notaport"
refuse ping-bad-count "$bin/smart-ping" --count -3 "$addr"
refuse perf-bad-op "$bin/smart-perf" --op frobnicate
refuse perf-bad-size "$bin/smart-perf" --op cas --size 16
refuse perf-raw-remote "$bin/smart-perf" --raw --connect "$addr"
refuse perf-bad-opt "$bin/smart-perf" --opt no_such_key=1 --seconds 0.1 --blade-size 16M
refuse smartd-no-size "$bin/smartd" --listen 127.0.0.1:0 --insecure
refuse smartd-bad-size "$bin/smartd" --size 12Q --insecure
# every bad value names its flag and exits 2
p=$bin/smart-perf
badflag qp-mode "$p" --qp-mode foo
badflag op "$p" --op frobnicate
badflag size "$p" --op cas --size 16
badflag size "$p" --size 12Q
badflag threads "$p" --threads 0
badflag depth "$p" --depth 5000
badflag seconds "$p" --seconds 0
badflag zipf "$p" --zipf 1.5
badflag credit "$p" --credit -1
badflag transport "$p" --transport ib
badflag opt "$p" --opt no_such_key=1
badflag opt "$p" --opt credit=99999
badflag blade-size "$p" --blade-size 1K
badflag batch "$p" --batch 0
badflag keys "$p" --keys 0
badflag raw "$p" --raw --connect "$addr"
badflag connect "$p" --connect "$addr" --connect "$addr"
badflag json "$p" --json=1
badflag threads "$p" --threads
badflag frobnicate "$p" --frobnicate
badflag count "$bin/smart-ping" --count -3 "$addr"
badflag op "$bin/smart-ping" --op swap "$addr"
badflag interval "$bin/smart-ping" --interval 1x "$addr"
badflag size "$bin/smart-ping" --size 0 "$addr"
badflag transport "$bin/smart-ping" --transport ib "$addr"
badflag size "$bin/smartd" --size 12Q --insecure
badflag size "$bin/smartd" --listen 127.0.0.1:0 --insecure
badflag id "$bin/smartd" --size 1G --id 5000
badflag chunk-size "$bin/smartd" --size 1G --chunk-size 3000
badflag chunk-size "$bin/smartd" --size 1G --chunk-size 12K
badflag transport "$bin/smartd" --size 1G --transport ib
badflag log-level "$bin/smartd" --size 1G --log-level loud
badflag ib-port "$bin/smartd" --size 1G --ib-port 0
badflag insecure "$bin/smartd" --size 16M --insecure --listen 10.1.2.3:7470
badflag runs "$bin/smart-switch-bench" --runs 0
badflag tasks "$bin/smart-switch-bench" --tasks x
# the blade survived all of that and still serves
check ping-after "$bin/smart-ping" --count 3 --interval 0 --secret-file "$tmp/secret" "$addr"
kill -TERM $pid; wait $pid; rc=$?; pid=
[ $rc -eq 0 ] && echo "ok   smartd-sigterm" || { echo "FAIL smartd exit $rc"; fail=1; }
# smart-ping against a blade that dies under it (kill -9): the probes fail,
# the summary says so and the exit status is 1 (shm keeps the memory
# mapped: only the control session tells the blade is gone)
"$bin/smartd" --size 16M --listen 127.0.0.1:0 --secret-file "$tmp/secret" \
	>"$tmp/smartd2.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "serving" "$tmp/smartd2.log" && break; sleep 0.1; done
addr=$(sed -n 's/.* on \([0-9.]*:[0-9]*\) .*/\1/p' "$tmp/smartd2.log")
"$bin/smart-ping" --count 40 --interval 0.05 --verify --op write \
	--secret-file "$tmp/secret" "$addr" >"$tmp/out" 2>&1 &
ping=$!
sleep 0.6
kill -9 $pid; wait $pid 2>/dev/null; pid=
wait $ping; rc=$?
if [ $rc -eq 1 ]; then echo "ok   ping-dead-blade (exit 1)"; else
	echo "FAIL ping-dead-blade: exit $rc"; cat "$tmp/out"; fail=1; fi
has ping-dead-blade-errors "ERROR SMART_ECONN"
has ping-dead-blade-summary "40 probes, [0-9]+ ok, [1-9][0-9]* failed"
[ $fail -eq 0 ] && echo "tools: all passed" || echo "tools: FAILED"
exit $fail
