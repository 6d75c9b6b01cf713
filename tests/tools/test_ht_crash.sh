#!/usr/bin/env bash
# bench/ht-crash.sh, short: 5 clients of a shared Smart-HT table (then 3 of
# a Smart-BT tree whose lock table is in emulated device memory, with
# nothing left used after the drop) killed at random (seeded) moments under
# another's updates, then a sweep of every key, and after the updater a
# sweep alone and a drop; the script must pass (no error in the updater or
# the sweep), then a Smart-BT churn on two blades and two trees with
# recoverers killed too.  Also its --help and the refusal of a bad flag.
# About 10 s.
# Usage: test_ht_crash.sh BIN_DIR
set -u
bin=${1:?usage: test_ht_crash.sh BIN_DIR}
script=$(cd "$(dirname "$0")/../.." && pwd)/bench/ht-crash.sh
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail=0

if bash "$script" --help | grep -q -- "--rounds N"; then echo "ok   help"; else
	echo "FAIL help"; fail=1; fi
bash "$script" --rounds x >"$out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "^ht-crash.sh: --rounds: want a non-negative integer ('x')" "$out"; then
	echo "ok   bad-flag (refused)"; else
	echo "FAIL bad-flag: status $rc"; cat "$out"; fail=1; fi

# crash NAME MEMORY EXTRA ARGS...: one run of the script; A, C and D clean,
# the drop leaving smartd's memory matching MEMORY, and EXTRA (a pattern,
# or "" for none) in the output
crash() {
	local name=$1 mem=$2 extra=$3
	shift 3
	bash "$script" "$@" --bin "$bin" >"$out" 2>&1
	rc=$?
	cat "$out"
	if [ $rc -eq 0 ] && grep -q "^A: [0-9]* ops in .*errors 0, validation failures 0," "$out" &&
	   grep -q "^C: sweep of 5000/5000 keys, errors 0, validation failures 0, .*: ok" "$out" &&
	   grep -q "^D: sweep of 5000/5000 keys alone, errors 0, validation failures 0, table dropped: true" "$out" &&
	   grep -q "^smartd memory after D's drop: $mem" "$out" &&
	   { [ -z "$extra" ] || grep -q "$extra" "$out"; }; then
		echo "ok   $name"; else
		echo "FAIL $name: status $rc"; fail=1; fi
}
crash crash-5-rounds ".*MiB" "" --rounds 5 --seed 1 --keys 5000
# the same on a Smart-BT tree, A and B updating the same keys, so that
# locks of killed clients are taken over; its lock table in (emulated)
# device memory
crash bt-crash-3-rounds ".* 0.0 used" "lock tables in device memory: 1$" \
	--ds bt --blades 1 --trees 1 --rounds 3 --seed 2 --keys 5000 \
	--b-workload update-only \
	--dm-size 256K
# Smart-BT as bench/ht-crash.sh runs it by default: two blades, two trees,
# B's churn (splits and merges across the blades) and a recoverer K killed
# after each B; every tree scanned whole in order, no superblock hit
bash "$script" --ds bt --rounds 4 --seed 3 --keys 5000 --bin "$bin" \
	>"$out" 2>&1
rc=$?
cat "$out"
if [ $rc -eq 0 ] && grep -q "^rounds: 4 B processes killed .* 4 recoverers killed" "$out" &&
   [ "$(grep -c "^C[12] and D[12] scanned the whole tree in order: [1-9][0-9]* and [1-9][0-9]* entries" "$out")" = 2 ] &&
   grep -q "^ht-crash: passed" "$out"; then
	echo "ok   bt-churn-2-blades-2-trees"; else
	echo "FAIL bt-churn-2-blades-2-trees: status $rc"; fail=1; fi
[ $fail -eq 0 ] && echo "ht-crash: all passed" || echo "ht-crash: FAILED"
exit $fail
