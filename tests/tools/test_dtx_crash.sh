#!/usr/bin/env bash
# bench/dtx-crash.sh, short: 3 SmallBank clients killed at random (seeded)
# moments beside a running one, on two smartds; the script must pass (the
# running client's check, the money as loaded after recovery, no lock
# left, the smartds' used memory unchanged).  Also its --help and the
# refusal of a bad flag.  About 10 s.
# Usage: test_dtx_crash.sh BIN_DIR
set -u
bin=${1:?usage: test_dtx_crash.sh BIN_DIR}
script=$(cd "$(dirname "$0")/../.." && pwd)/bench/dtx-crash.sh
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail=0

if bash "$script" --help | grep -q -- "--rounds N"; then echo "ok   help"; else
	echo "FAIL help"; fail=1; fi
bash "$script" --accounts x >"$out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "^dtx-crash.sh: --accounts: want a non-negative integer ('x')" "$out"; then
	echo "ok   bad-flag (refused)"; else
	echo "FAIL bad-flag: status $rc"; cat "$out"; fail=1; fi

bash "$script" --rounds 3 --seed 5 --accounts 10000 --bin "$bin" >"$out" 2>&1
rc=$?
cat "$out"
if [ $rc -eq 0 ] && grep -q "^A: .* errors 0, check pass," "$out" &&
   grep -q "^R: .* check pass; money" "$out" &&
   grep -q "^dtx-crash: passed" "$out"; then
	echo "ok   crash"; else
	echo "FAIL crash: status $rc"; fail=1; fi

[ $fail = 0 ] && echo "dtx crash: all passed" || echo "dtx crash: FAILED"
exit $fail
