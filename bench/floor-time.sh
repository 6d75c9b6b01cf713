#!/usr/bin/env bash
# floor-time.sh: the floor (smart-floor), the framework (smart-perf) and
# raw (smart-perf --raw) in time, 8-B ops, alternated round by round;
# with --old, another build's framework beside this one's.
#
# Instructions per op (bench/op-cost.sh) are clock-free; a rate is not:
# on a shared machine the load moves every rate between runs, so the
# kinds run one after the other in each round (a change of load hits all
# of a round alike), and the medians over the rounds and the medians of
# each round's own ratios are reported.  The same span (64M, op-cost.sh's),
# depth and batch for all; raw ignores the batch (it has no sync).  A
# span that fits the caches (--span 256K) shows the instructions'
# difference; 64M adds the misses (TLB and cache) that every op pays.
# The floor is a one-thread READ: with another --op or --threads it is
# not run.  The kinds take turns at running first: the one that runs
# first in a round was seen to gain about 1% (2026-11-29, docs/design.md
# §9.7); over a multiple of their number of rounds (3 or 4 kinds: the 6
# rounds of the default balance 3, 12 both) each runs in every place
# alike.
#
# Usage: bench/floor-time.sh [--bin DIR] [--old DIR] [--op OP]
#          [--threads T] [--rounds N] [--seconds S] [--depth D]
#          [--batch B] [--span SIZE]
#   --bin DIR    this build's binaries [build/bin]
#   --old DIR    another build's binaries: its smart-perf runs too, and
#                new/old is reported
#   --op OP      read, write or cas [read]
#   --threads T  the frameworks' and raw's threads [1]
#   --rounds N   rounds of the runs [6]
#   --seconds S  each run's window [1]
#   --depth D    coroutines (raw: accesses per round) [8]
#   --batch B    ops per sync, floor and framework [1]
#   --span SIZE  bytes the offsets spread over, K/M/G [64M]
# Prints each round's Mops, then the medians and the ratios floor/raw,
# framework/raw, framework/floor (and old/raw, new/old).  Exit 0, 1 (a
# run failed), 2 (a bad flag).
set -u
cd "$(dirname "$0")/.."
usage() { sed -n '/^# Usage:/,/^# Prints/p' "$0" | sed 's/^# \{0,1\}//'; }
bad() { echo "floor-time.sh: $1: $2" >&2; exit 2; }
BIN=build/bin OLD= OP=read THREADS=1 ROUNDS=6 SECS=1 DEPTH=8 BATCH=1 SPAN=64M
while [ $# -gt 0 ]; do
	case $1 in
	--help|-h) usage; exit 0 ;;
	--bin|--old|--op|--threads|--rounds|--seconds|--depth|--batch|--span)
		[ $# -ge 2 ] || bad "$1" "needs a value" ;;
	*) bad "$1" "unknown flag (see --help)" ;;
	esac
	case $1 in
	--bin) BIN=$2 ;;
	--old) OLD=$2 ;;
	--op) [[ $2 =~ ^(read|write|cas)$ ]] ||
		bad "$1" "want read, write or cas ('$2')"; OP=$2 ;;
	--span) [[ $2 =~ ^[1-9][0-9]*[KMG]?$ ]] ||
		bad "$1" "want a size like 64M ('$2')"; SPAN=$2 ;;
	--seconds) [[ $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
		bad "$1" "want seconds ('$2')"; SECS=$2 ;;
	--threads|--rounds|--depth|--batch) [[ $2 =~ ^[1-9][0-9]*$ ]] ||
		bad "$1" "want a number ('$2')"
		case $1 in --threads) THREADS=$2 ;; --rounds) ROUNDS=$2 ;;
		--depth) DEPTH=$2 ;; *) BATCH=$2 ;; esac ;;
	esac
	shift 2
done
for t in smart-floor smart-perf; do
	[ -x "$BIN/$t" ] || bad --bin "no $t in $BIN (build first)"
done
[ -z "$OLD" ] || [ -x "$OLD/smart-perf" ] ||
	bad --old "no smart-perf in $OLD"
FLOOR=0
[ "$OP" = read ] && [ "$THREADS" = 1 ] && FLOOR=1

# mops KIND: one run's Mops; the tool's status when it failed (2: it
# refused a value this script passed on)
mops() {
	local out v perf=("--op" "$OP" --size 8 --threads "$THREADS"
		--seconds "$SECS" --span "$SPAN" --depth "$DEPTH" --json)
	case $1 in
	floor) out=$("$BIN/smart-floor" --seconds "$SECS" --span "$SPAN" \
		--depth "$DEPTH" --batch "$BATCH" --json) ;;
	fw) out=$("$BIN/smart-perf" "${perf[@]}" --batch "$BATCH") ;;
	old) out=$("$OLD/smart-perf" "${perf[@]}" --batch "$BATCH") ;;
	raw) out=$("$BIN/smart-perf" "${perf[@]}" --raw) ;;
	esac || return
	v=$(grep -o '"mops":[0-9.]*' <<<"$out" | head -1 | cut -d: -f2)
	# a run that said nothing of its rate failed, whatever its status
	[[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]] && [ "$v" != 0 ] && echo "$v"
}

printf "%-6s %9s %9s %9s %9s\n" round floor framework old raw
# the kinds this comparison runs; round r starts at the (r-1)-th and goes
# round the list, so over a multiple of their number of rounds each kind
# runs in every position alike
kinds=()
[ $FLOOR = 1 ] && kinds+=(floor)
kinds+=(fw)
[ -n "$OLD" ] && kinds+=(old)
kinds+=(raw)
rows=()
for r in $(seq "$ROUNDS"); do
	declare -A got=([floor]=- [old]=-)
	for i in "${!kinds[@]}"; do
		k=${kinds[$(((r - 1 + i) % ${#kinds[@]}))]}
		got[$k]=$(mops "$k") || {
			[ $? = 2 ] && exit 2 # the tool said which flag, and why
			echo "floor-time.sh: round $r: a $k run failed" >&2
			exit 1
		}
	done
	f=${got[floor]} w=${got[fw]} o=${got[old]} x=${got[raw]}
	printf "%-6s %9s %9s %9s %9s\n" "$r" "$f" "$w" "$o" "$x"
	rows+=("$f $w $o $x")
	unset got
done
printf "%s\n" "${rows[@]}" | awk -v op="$OP" -v t="$THREADS" -v d="$DEPTH" "$(cat bench/median.awk)"'
	{ n++; f[n] = $1; w[n] = $2; o[n] = $3; x[n] = $4
	  wx[n] = $2 / $4
	  if ($1 != "-") { fx[n] = $1 / $4; wf[n] = $2 / $1 }
	  if ($3 != "-") { ox[n] = $3 / $4; wo[n] = $2 / $3 } }
	END {
		hf = f[1] != "-"; ho = o[1] != "-"
		mw = med(w, n); mx = med(x, n)
		printf "%s 8 B, %s x %s: median Mops: framework %.3f, raw %.3f",
		       op, t, d, mw, mx
		if (hf) printf ", floor %.3f", mf = med(f, n)
		if (ho) printf ", old %.3f", mo = med(o, n)
		printf "\nmedians of the rounds'"'"' ratios: framework/raw %.3f",
		       med(wx, n)
		if (hf) printf ", floor/raw %.3f, framework/floor %.3f",
			       med(fx, n), med(wf, n)
		if (ho) printf ", old/raw %.3f, new/old %.3f",
			       med(ox, n), med(wo, n)
		printf "\nratios of the medians: framework/raw %.3f", mw / mx
		if (hf) printf ", floor/raw %.3f", mf / mx
		if (ho) printf ", new/old %.3f", mw / mo
		print ""
	}'
