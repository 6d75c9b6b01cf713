#!/usr/bin/env bash
# smart-perf --sim and smart-bench --sim (docs/sim.md): the unchanged
# benchmarks in virtual time.
# 16 simulated threads x 8 coroutines on one OS thread for 2 ms of virtual
# time; the same seed twice prints byte-identical tables, another seed
# another interleaving; per-thread QPs contend on shared doorbells where
# per-thread-db does not; a bad spec is refused.  smart-bench's YCSB-A on
# Smart-HT (4 x 4, 2 ms) twice with one seed: byte-identical, validated.
# Runs in seconds; asserts no real time.
# Usage: test_perf_sim.sh BIN_DIR
set -u
bin=${1:?usage: test_perf_sim.sh BIN_DIR}
p=$bin/smart-perf
. "$(dirname "$0")/check-lib.sh"

nic=rtt_ns=2000,mops=110,doorbells=16,db_hold_ns=170,handoff_ns=90
nic=$nic,wqe_cache=1024,miss_ns=9
run=(--threads 16 --seconds 2ms --span 1M --blade-size 64M --nic-model "$nic"
     --techniques None)

check seed1 "$p" --sim seed=1 "${run[@]}" --qp-mode per-thread
has transport "Transport +: sim"
cp "$tmp/out" "$tmp/a"
check seed1-again "$p" --sim seed=1 "${run[@]}" --qp-mode per-thread
if cmp -s "$tmp/a" "$tmp/out"; then echo "ok   identical"; else
	echo "FAIL identical:"; diff "$tmp/a" "$tmp/out"; fail=1; fi
has contended "doorbells [0-9]+ \(contended [1-9]"
check seed2 "$p" --sim seed=2 "${run[@]}" --qp-mode per-thread
if ! cmp -s "$tmp/a" "$tmp/out"; then echo "ok   seed-differs"; else
	echo "FAIL seed-differs: seed 2 printed what seed 1 did"; fail=1; fi
check per-thread-db "$p" --sim seed=1 "${run[@]}" --qp-mode per-thread-db
has uncontended "doorbells [0-9]+ \(contended 0\)"
# a bad spec is bad input: refused at parse, exit 2 (it was exit 1 at the run)
refuse bad-spec "^smart-perf: --sim: .*'bogus=1'" "$p" --sim bogus=1 "${run[@]}"

b=$bin/smart-bench
ycsb=(ycsb --sim seed=3 --keys 3000 --seconds 2ms --threads 4 --coros 4
      --workload a --nic-model "$nic")
check bench-seed3 "$b" "${ycsb[@]}"
has bench-validated "validation failures 0"
cp "$tmp/out" "$tmp/a"
check bench-seed3-again "$b" "${ycsb[@]}"
if cmp -s "$tmp/a" "$tmp/out"; then echo "ok   bench-identical"; else
	echo "FAIL bench-identical:"; diff "$tmp/a" "$tmp/out"; fail=1; fi
exit $fail
