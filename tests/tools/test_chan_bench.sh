#!/usr/bin/env bash
# smart-bench chan (docs/rpc.md §17): in one process pair, every method
# (memcpy, IMM and FOOTER channels, rpc_send, the cross-process floor)
# runs and reports, every payload byte checked (--check: seeded by its
# slot number, no error); the two-host mode on loopback: a `--serve`
# consumer serves two `--connect` producers in turn (no floor there),
# then stops at SIGTERM with status 0; contradictory flags are refused.
# Runs in seconds on shm.
# Usage: test_chan_bench.sh BIN_DIR
set -u
bin=${1:?usage: test_chan_bench.sh BIN_DIR}
b=$bin/smart-bench
. "$(dirname "$0")/check-lib.sh"
export SMART_TRANSPORT=shm

check local "$b" chan --size 4K --mib 1 --rounds 1 --check --json
fields local-keys memcpy_gbps imm_gbps footer_gbps rpc_gbps floor_gbps \
	imm_p50_us slots_per_method checked errors
within local-errors errors 0 0
within local-checked checked 1 1
within local-floor floor_gbps 0.000001 100000
check seq-only "$b" chan --size 8K --slots 4 --mib 1 --rounds 1 --seq-only --json
within seq-only-errors errors 0 0

printf 'chan-bench-test-secret-%s' "$RANDOM" >"$tmp/secret"
chmod 600 "$tmp/secret"
"$b" chan --serve --secret-file "$tmp/secret" >"$tmp/serve.out" 2>"$tmp/serve.err" &
srv=$!
pids+=($srv)
addr=
for _ in $(seq 300); do # its address line, at most 30 s
	addr=$(head -1 "$tmp/serve.out" 2>/dev/null)
	[ -n "$addr" ] && break
	kill -0 $srv 2>/dev/null || break
	sleep 0.1
done
if [ -z "$addr" ]; then
	echo "FAIL serve: no address"; cat "$tmp/serve.err"; fail=1
else
	echo "ok   serve ($addr)"
	for i in 1 2; do
		check connect$i "$b" chan --connect "$addr" --secret-file "$tmp/secret" \
			--size 32K --mib 2 --rounds 1 --check --json
		within connect$i-errors errors 0 0
		within connect$i-imm imm_gbps 0.000001 100000
		within connect$i-no-floor floor_gbps 0 0
	done
	kill -TERM $srv
	if wait $srv; then echo "ok   serve-stops"; else
		echo "FAIL serve-stops: status $?"; cat "$tmp/serve.err"; fail=1; fi
fi

refuse serve-connect "exclude each other" "$b" chan --serve --connect 127.0.0.1:1
refuse listen-alone "is for --serve" "$b" chan --listen 127.0.0.1:0
exit $fail
