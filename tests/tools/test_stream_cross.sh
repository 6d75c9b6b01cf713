#!/usr/bin/env bash
# smart-bench stream across processes given by address (docs/stream.md §8,
# cross-host mode) on shm, this host: for slash and uppar, YSB with two
# executor processes (--peer x2, --executor 0/1, --secret-file), executor
# 0 started first; executor 1 starts only once 0 said it is waiting for
# it (its dial was refused: the retry path taken, dial_retries > 0, no
# timing luck).  Each executor's check must be "equal" (its result count
# and digest those of its share of the locally computed reference), the
# two shares add up to the reference of the one-process run, and slash
# and uppar give the same digests.  Then the refusals: --peer alone, an
# --executor past the peers, engine local, no secret; and a peer that
# never comes: SMART_ETIMEDOUT after --dial-wait (exit 1).  A few seconds.
# Usage: test_stream_cross.sh BIN_DIR
set -u
bin=${1:?usage: test_stream_cross.sh BIN_DIR}
b=$bin/smart-bench
. "$(dirname "$0")/check-lib.sh"

(umask 077 && head -c 32 /dev/urandom | base64 >"$tmp/sec")
unset SMART_SECRET_FILE
# ports: random, a pair per engine (check-lib.sh's fixed_port); the shm
# endpoint's name is per port
base=$(fixed_port 4)
common=(stream --workload ysb --records 20000 --epoch 1000 --window 3000
	--zipf 0.99 --check --json --secret-file "$tmp/sec")

run_pair() { # ENGINE PORT: both executors, 0 first; JSON in $tmp/$1.{0,1}
	local e=$1 p=$2 peers=(--peer "127.0.0.1:$2" --peer "127.0.0.1:$(($2 + 1))")
	"$b" "${common[@]}" --engine "$e" "${peers[@]}" --executor 0 \
		>"$tmp/$e.0" 2>"$tmp/$e.0.err" &
	local pid=$!
	pids+=($pid)
	for _ in $(seq 600); do # executor 0 says so, or is gone
		grep -q "waiting for" "$tmp/$e.0.err" && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.1
	done
	"$b" "${common[@]}" --engine "$e" "${peers[@]}" --executor 1 \
		>"$tmp/$e.1" 2>"$tmp/$e.1.err"
	local rc1=$? rc0
	wait $pid
	rc0=$?
	cp "$tmp/$e.0" "$tmp/out"
	if [ $rc0 = 0 ] && [ $rc1 = 0 ]; then echo "ok   $e-run"; else
		echo "FAIL $e-run: executor 0 exited $rc0, 1 exited $rc1"
		cat "$tmp/$e.0" "$tmp/$e.0.err" "$tmp/$e.1" "$tmp/$e.1.err"
		fail=1; fi
}

val() { grep -o "\"$1\":[^,}]*" "$2" | head -1 | cut -d: -f2 | tr -d '"'; }

for e in slash uppar; do
	run_pair $e $base
	base=$((base + 2))
	cp "$tmp/$e.0" "$tmp/out"
	fields "$e-json" engine executor executors records ns rps \
		bytes_per_rec epochs dial_retries results digest ref_results \
		ref_digest check
	within "$e-retried" dial_retries 1 1e9
	for i in 0 1; do
		cp "$tmp/$e.$i" "$tmp/out"
		has "$e-$i-equal" '"check":"equal"'
		within "$e-$i-results" results 1 1e9
		within "$e-$i-bytes" bytes_per_rec 0.001 1e9
		d=$(val digest "$tmp/$e.$i")
		[ -n "$d" ] && [ "$d" = "$(val ref_digest "$tmp/$e.$i")" ] &&
			echo "ok   $e-$i-digest" ||
			{ echo "FAIL $e-$i-digest"; fail=1; }
	done
done
# the shares cover the one-process run's results, and the engines agree
check whole "$b" stream --workload ysb --records 20000 --epoch 1000 \
	--window 3000 --zipf 0.99 --rounds 1 --engine one --check
whole=$(awk '$1 == "one" { print $(NF - 3) }' "$tmp/out")
r0=$(val results "$tmp/slash.0") r1=$(val results "$tmp/slash.1")
sum=$((${r0:-0} + ${r1:-0}))
[ -n "$whole" ] && [ "$sum" = "$whole" ] && echo "ok   shares ($sum results)" ||
	{ echo "FAIL shares: $sum results across the executors, one-thread run '$whole'"; fail=1; }
for i in 0 1; do
	d=$(val digest "$tmp/slash.$i")
	[ -n "$d" ] && [ "$d" = "$(val digest "$tmp/uppar.$i")" ] &&
		echo "ok   slash-uppar-$i" ||
		{ echo "FAIL slash-uppar-$i: digests differ"; fail=1; }
done

peers=(--peer 127.0.0.1:$base --peer 127.0.0.1:$((base + 1)))
refuse one-peer "peer" "$b" stream --engine slash --peer 127.0.0.1:$base \
	--secret-file "$tmp/sec"
refuse executor "executor" "$b" stream --engine slash "${peers[@]}" \
	--executor 2 --secret-file "$tmp/sec"
refuse engine "engine" "$b" stream --engine local "${peers[@]}" \
	--secret-file "$tmp/sec"
refuse secret "secret-file" "$b" stream --engine slash "${peers[@]}"
refuse stray "executor" "$b" stream --executor 1
fails no-peer "timed out|refused" "$b" stream --engine slash --records 1000 \
	"${peers[@]}" --executor 0 --dial-wait 1 --secret-file "$tmp/sec"
exit $fail
