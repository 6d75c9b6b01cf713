#!/usr/bin/env bash
# floor-time.sh: the floor (smart-floor), the framework (smart-perf) and
# raw (smart-perf --raw) in time, READ 8 B, alternated round by round.
#
# Instructions per op (bench/op-cost.sh) are clock-free; a rate is not:
# on a shared machine the load moves every rate between runs, so the
# three run one after the other in each round (a change of load hits all
# three of a round alike), and the medians over the rounds and the
# medians of each round's own ratios are reported.  One thread, the same
# span (64M, op-cost.sh's), depth and batch for all three; raw ignores
# the batch (it has no sync).  A span that fits the caches (--span 256K)
# shows the instructions' difference; 64M adds the misses (TLB and
# cache) that every op of the three pays.
#
# Usage: bench/floor-time.sh [--bin DIR] [--rounds N] [--seconds S]
#          [--depth D] [--batch B] [--span SIZE]
#   --rounds N   rounds of the three runs [5]
#   --seconds S  each run's window [1]
#   --depth D    coroutines (raw: accesses per round) [8]
#   --batch B    ops per sync, floor and framework [1]
#   --span SIZE  bytes the offsets spread over, K/M/G [64M]
# Prints each round's Mops, then the medians and the ratios floor/raw,
# framework/raw and framework/floor.  Exit 0, 1 (a run failed), 2 (a bad
# flag).
set -u
cd "$(dirname "$0")/.."
usage() { sed -n '/^# Usage:/,/^# Prints/p' "$0" | sed 's/^# \{0,1\}//'; }
bad() { echo "floor-time.sh: $1: $2" >&2; exit 2; }
BIN=build/bin ROUNDS=5 SECS=1 DEPTH=8 BATCH=1 SPAN=64M
while [ $# -gt 0 ]; do
	case $1 in
	--help|-h) usage; exit 0 ;;
	--bin|--rounds|--seconds|--depth|--batch|--span)
		[ $# -ge 2 ] || bad "$1" "needs a value" ;;
	*) bad "$1" "unknown flag (see --help)" ;;
	esac
	case $1 in
	--bin) BIN=$2 ;;
	--span) [[ $2 =~ ^[1-9][0-9]*[KMG]?$ ]] ||
		bad "$1" "want a size like 64M ('$2')"; SPAN=$2 ;;
	--seconds) [[ $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
		bad "$1" "want seconds ('$2')"; SECS=$2 ;;
	--rounds|--depth|--batch) [[ $2 =~ ^[1-9][0-9]*$ ]] ||
		bad "$1" "want a number ('$2')"
		case $1 in --rounds) ROUNDS=$2 ;; --depth) DEPTH=$2 ;;
		*) BATCH=$2 ;; esac ;;
	esac
	shift 2
done
for t in smart-floor smart-perf; do
	[ -x "$BIN/$t" ] || bad --bin "no $t in $BIN (build first)"
done

# mops KIND: one run's Mops; the tool's status when it failed (2: it
# refused a value this script passed on)
mops() {
	local out
	case $1 in
	floor) out=$("$BIN/smart-floor" --seconds "$SECS" --span "$SPAN" \
		--depth "$DEPTH" --batch "$BATCH" --json) ;;
	fw) out=$("$BIN/smart-perf" --op read --size 8 --threads 1 \
		--seconds "$SECS" --span "$SPAN" --depth "$DEPTH" \
		--batch "$BATCH" --json) ;;
	raw) out=$("$BIN/smart-perf" --op read --size 8 --threads 1 \
		--seconds "$SECS" --span "$SPAN" --depth "$DEPTH" --raw --json) ;;
	esac || return
	grep -o '"mops":[0-9.]*' <<<"$out" | cut -d: -f2
}

printf "%-6s %9s %9s %9s\n" round floor framework raw
rows=()
for r in $(seq "$ROUNDS"); do
	f=$(mops floor) && w=$(mops fw) && x=$(mops raw) || {
		[ $? = 2 ] && exit 2 # the tool said which flag, and why
		echo "floor-time.sh: round $r: a run failed" >&2
		exit 1
	}
	printf "%-6s %9.3f %9.3f %9.3f\n" "$r" "$f" "$w" "$x"
	rows+=("$f $w $x")
done
printf "%s\n" "${rows[@]}" | awk '
	function med(a, n,   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
				t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
			}
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	{ n++; f[n] = $1; w[n] = $2; x[n] = $3
	  fx[n] = $1 / $3; wx[n] = $2 / $3; wf[n] = $2 / $1 }
	END {
		mf = med(f, n); mw = med(w, n); mx = med(x, n)
		printf "median Mops: floor %.3f, framework %.3f, raw %.3f\n",
		       mf, mw, mx
		printf "ratios of the medians: floor/raw %.3f, " \
		       "framework/raw %.3f, framework/floor %.3f\n",
		       mf / mx, mw / mx, mw / mf
		printf "medians of the rounds'"'"' ratios: floor/raw %.3f, " \
		       "framework/raw %.3f, framework/floor %.3f\n",
		       med(fx, n), med(wx, n), med(wf, n)
	}'
