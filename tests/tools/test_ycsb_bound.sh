#!/usr/bin/env bash
# bench/ycsb-bound.sh (YCSB-C on Smart-HT against the raw bound,
# docs/results.md) runs: one short round alone, then beside an "old"
# build (here the same one), each printing its share of the bound and,
# with --old, new/old; a bad flag or a build without the tools exits 2
# with its one error line.  A few seconds.
# Usage: test_ycsb_bound.sh BIN_DIR
set -u
bin=${1:?usage: test_ycsb_bound.sh BIN_DIR}
yb=$(dirname "$0")/../../bench/ycsb-bound.sh
. "$(dirname "$0")/check-lib.sh"

check alone "$yb" --bin "$bin" --rounds 1 --seconds 0.2
has alone-share "^medians: new [0-9.]+ M searches/s, [0-9.]+% of the bound$"
check old "$yb" --bin "$bin" --old "$bin" --rounds 2 --seconds 0.2
has old-ratio "; new/old [0-9.]+$"
refuse rounds "--rounds: want a number" "$yb" --bin "$bin" --rounds 0
refuse no-tools "--bin: no smart-bench" "$yb" --bin "$tmp"
refuse no-old "--old: no smart-bench" "$yb" --bin "$bin" --old "$tmp"
refuse flag "unknown flag" "$yb" --bin "$bin" --nope
# a value the tool refuses: its status (2) and its own line
refuse tool-refuses "smart-bench: --seconds" "$yb" --bin "$bin" --rounds 1 \
	--seconds 0
[ $fail -eq 0 ] && echo "ycsb_bound: all passed" || echo "ycsb_bound: FAILED"
exit $fail
