#!/usr/bin/env bash
# smart-floor (bench/smart-floor.c, issue 27's floor of the op path) runs
# as bench/op-cost.sh runs it: short runs at depth 1 and 8, batch 1 and 8,
# every WR signalled or only a sync's last, each exits 0 with ops > 0 in
# its JSON (the key op-cost.sh reads) and a rate that is ops over its
# seconds; the table without --json; --help exits 0, a bad flag or value
# exits 2 with the tools' one error line.  About 2 s.
# Usage: test_floor.sh BIN_DIR
set -u
bin=${1:?usage: test_floor.sh BIN_DIR}
f=$bin/smart-floor
tmp=$(mktemp -d)
fail=0
trap 'rm -rf "$tmp"' EXIT
ok() { echo "ok   $1"; }
no() { echo "FAIL $1"; cat "$tmp/out"; fail=1; }

[ -x "$f" ] || { echo "FAIL no $f"; exit 1; }
for run in "1 1" "8 1" "1 8" "8 8" "8 8 --signal-last"; do
	set -- $run
	name="depth-$1-batch-$2${3:+-signal-last}"
	"$f" --seconds 0.2 --span 16M --depth "$1" --batch "$2" ${3:-} --json \
		>"$tmp/out" 2>&1
	rc=$?
	ops=$(grep -o '"ops":[0-9]*' "$tmp/out" | cut -d: -f2)
	if [ $rc -eq 0 ] && [ "${ops:-0}" -gt 0 ] &&
	   awk -F'[:,]' '{ for (i = 1; i < NF; i++) v[$i] = $(i + 1) }
		END { m = v["\"ops\""] / v["\"seconds\""] / 1e6
		      exit !(m > 0 && v["\"mops\""] / m > 0.99 &&
			     v["\"mops\""] / m < 1.01) }' "$tmp/out"; then
		ok "$name ($ops ops)"
	else
		no "$name: status $rc, ops '${ops:-}'"
	fi
done
"$f" --seconds 0.1 --span 16M >"$tmp/out" 2>&1 &&
	grep -qE '^ [0-9]+ +[0-9.]+ +[0-9.]+$' "$tmp/out" && ok table || no table
"$f" --help >"$tmp/out" 2>&1 && grep -q -- "--depth D" "$tmp/out" &&
	ok help || no help
badflag() {
	local name=$1
	shift
	"$f" "$@" >"$tmp/out" 2>&1
	local rc=$?
	[ $rc -eq 2 ] && grep -q "^smart-floor: --" "$tmp/out" &&
		ok "bad-$name (exit 2)" || no "bad-$name: status $rc"
}
badflag flag --no-such-flag
badflag depth --depth 0
badflag batch --batch x
badflag span --span 1K
# a span beyond the memory free: refused (exit 2) before a page of it is
# touched, as smart-perf refuses a pool it cannot hold (the touch would end
# in the OOM killer or a SIGBUS); run under an address-space limit so that
# a tool that does map it fails at the mmap instead (not under a
# sanitizer: ASan reserves terabytes of shadow at start, which that limit
# refuses before the tool runs)
avail=$(awk '/^MemAvailable:/ { printf "%d\n", $2 * 1024 }' /proc/meminfo)
if ldd "$f" 2>/dev/null | grep -q 'lib[at]san'; then
	echo "skip bad-span-memory: $f is built with a sanitizer, whose" \
		"shadow memory an address-space limit refuses"
elif [ -n "$avail" ] && [ "$avail" -lt $((1 << 40)) ]; then
	(ulimit -v 4194304; exec "$f" --span 1T --seconds 0.1) >"$tmp/out" 2>&1
	rc=$?
	[ $rc -eq 2 ] && grep -q "^smart-floor: --span" "$tmp/out" &&
		ok "bad-span-memory (exit 2)" || no "bad-span-memory: status $rc"
fi
# bench/floor-time.sh: a value its tools refuse is a bad flag (2), not a
# failed run (1)
ft=$(dirname "$0")/../../bench/floor-time.sh
for v in "--seconds 0" "--depth 2000" "--span 1K"; do
	"$ft" --bin "$bin" --rounds 1 $v >"$tmp/out" 2>&1
	rc=$?
	[ $rc -eq 2 ] && ok "floor-time $v (exit 2)" ||
		no "floor-time $v: status $rc"
done
# --old: another build's framework beside this one's (here the same
# build), new/old reported; a WRITE runs no floor (it is a READ's)
"$ft" --bin "$bin" --old "$bin" --op write --rounds 2 --seconds 0.1 \
	>"$tmp/out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q "new/old [0-9]" "$tmp/out" &&
	! grep -q "floor/raw" "$tmp/out" && ok "floor-time --old --op write" ||
	{ no "floor-time --old --op write: status $rc"; cat "$tmp/out"; }
"$ft" --bin "$bin" --op faa --rounds 1 >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 2 ] && ok "floor-time --op faa (exit 2)" ||
	no "floor-time --op faa: status $rc"
# a run that exits 0 without its rate is a failed run (1), not a row of
# shifted columns and an exit 0
mkdir "$tmp/stub"
for t in smart-floor smart-perf; do
	printf '#!/bin/sh\necho "{\\"ops\\":1}"\n' >"$tmp/stub/$t"
	chmod +x "$tmp/stub/$t"
done
"$ft" --bin "$tmp/stub" --rounds 1 >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "a floor run failed" "$tmp/out" &&
	ok "floor-time without a rate (exit 1)" ||
	no "floor-time without a rate: status $rc"
[ $fail -eq 0 ] && echo "floor: all passed" || echo "floor: FAILED"
exit $fail
