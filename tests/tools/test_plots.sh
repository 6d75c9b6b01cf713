#!/usr/bin/env bash
# bench/plots.sh draws every figure from the committed CSVs (no run): each
# PNG written, non-empty, and a PNG; a bad flag is refused with exit 2
# before anything is drawn.  Skipped (77) without gnuplot.
# Usage: test_plots.sh BIN_DIR   (BIN_DIR unused: the script only plots)
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
command -v gnuplot >/dev/null || { echo "no gnuplot: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
"$src/bench/plots.sh" --run nothing >"$tmp/bad" 2>&1
rc=$?
[ $rc -eq 2 ] && echo "ok   bad-flag-exit-2" || { echo "FAIL bad-flag-exit-2: $rc"; cat "$tmp/bad"; fail=1; }
OUT=$tmp/plots "$src/bench/plots.sh" >"$tmp/log" 2>&1 || { echo "FAIL plots.sh:"; cat "$tmp/log"; exit 1; }
n=0
for f in "$src"/bench/results/plots/*.png; do
	p=$tmp/plots/$(basename "$f")
	if [ -s "$p" ] && [ "$(head -c 4 "$p" | tail -c 3)" = PNG ]; then n=$((n + 1)); else
		echo "FAIL $(basename "$f") not drawn"; fail=1; fi
done
[ $n -gt 0 ] && echo "ok   $n figures drawn" || { echo "FAIL no figure"; fail=1; }
[ $fail -eq 0 ] && echo "plots: all passed" || echo "plots: FAILED"
exit $fail
