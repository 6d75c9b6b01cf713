#!/usr/bin/env bash
# ycsb-bound.sh: YCSB-C on Smart-HT per thread against the raw bound, the
# framework's figure of merit for a read-only key-value load
# (docs/results.md): searches per second over what plain loads allow.
#
# The bound of a round is raw's rate of 128-B READs (smart-perf --raw:
# plain loads on the blade's mapping, the hardware's and the OS's limit)
# over the run's own READs per search (reads_per_op: 3.2 or so, the
# directory, the bucket pair and the entry).  The bound moves with the
# machine's load as much as the rate does, so each round measures its
# own, right after its runs.  With --old another build's smart-bench runs
# too; the two swap places every round (the one that runs first was seen
# to gain about 1%, docs/design.md §9.7).
#
# Usage: bench/ycsb-bound.sh [--bin DIR] [--old DIR] [--rounds N]
#          [--seconds S] [--coros C]
#   --bin DIR    this build's binaries [build/bin]
#   --old DIR    another build's binaries: its smart-bench runs too
#   --rounds N   rounds (even: each build first as often) [6]
#   --seconds S  each YCSB run's window (raw runs 1 s) [2]
#   --coros C    coroutines of the one thread [8]
# Prints each round's searches per second, the bound and the share,
# then their medians (and new/old).  Exit 0, 1 (a run failed), 2 (a bad
# flag).
set -u
cd "$(dirname "$0")/.."
usage() { sed -n '/^# Usage:/,/^# Prints/p' "$0" | sed 's/^# \{0,1\}//'; }
bad() { echo "ycsb-bound.sh: $1: $2" >&2; exit 2; }
BIN=build/bin OLD= ROUNDS=6 SECS=2 COROS=8
while [ $# -gt 0 ]; do
	case $1 in
	--help|-h) usage; exit 0 ;;
	--bin|--old|--rounds|--seconds|--coros)
		[ $# -ge 2 ] || bad "$1" "needs a value" ;;
	*) bad "$1" "unknown flag (see --help)" ;;
	esac
	case $1 in
	--bin) BIN=$2 ;;
	--old) OLD=$2 ;;
	--seconds) [[ $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
		bad "$1" "want seconds ('$2')"; SECS=$2 ;;
	--rounds|--coros) [[ $2 =~ ^[1-9][0-9]*$ ]] ||
		bad "$1" "want a number ('$2')"
		case $1 in --rounds) ROUNDS=$2 ;; *) COROS=$2 ;; esac ;;
	esac
	shift 2
done
for t in smart-bench smart-perf; do
	[ -x "$BIN/$t" ] || bad --bin "no $t in $BIN (build first)"
done
[ -z "$OLD" ] || [ -x "$OLD/smart-bench" ] ||
	bad --old "no smart-bench in $OLD"

val() { grep -o "\"$1\":[0-9.]*" | head -1 | cut -d: -f2; }
ERR=$(mktemp)
trap 'rm -f "$ERR"' EXIT

# one DIR: "mops reads_per_op bound_mops" of a YCSB-C run of DIR's
# smart-bench and a raw run beside it; the tool's status when it failed
one() {
	local j raw m rp rc
	j=$("$1/smart-bench" ycsb --ds ht --workload c --threads 1 \
		--coros "$COROS" --seconds "$SECS" --json 2>"$ERR") || {
		rc=$?; cat "$ERR" >&2; return $rc; }
	raw=$("$BIN/smart-perf" --raw --op read --size 128 --depth "$COROS" \
		--seconds 1 --json 2>"$ERR") || {
		rc=$?; cat "$ERR" >&2; return $rc; }
	raw=$(val mops <<<"$raw")
	m=$(val mops <<<"$j")
	rp=$(val reads_per_op <<<"$j")
	# a run that said nothing of its rate failed, whatever its status
	for v in "$m" "$rp" "$raw"; do
		[[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]] && [ "$v" != 0 ] || return 1
	done
	awk -v m="$m" -v rp="$rp" -v raw="$raw" \
		'BEGIN { printf "%s %s %.4f\n", m, rp, raw / rp }'
}

printf "%-6s %10s %10s %7s %10s %10s %7s\n" round "new M/s" bound share \
	"old M/s" bound share
rows=()
for r in $(seq "$ROUNDS"); do
	o="- - -"
	if [ -n "$OLD" ] && [ $((r % 2)) = 0 ]; then
		o=$(one "$OLD") && n=$(one "$BIN")
	elif [ -n "$OLD" ]; then
		n=$(one "$BIN") && o=$(one "$OLD")
	else
		n=$(one "$BIN")
	fi || {
		[ $? = 2 ] && exit 2
		echo "ycsb-bound.sh: round $r: a run failed" >&2
		exit 1
	}
	rows+=("$n $o")
	awk -v r="$r" '{ printf "%-6s %10.3f %10.3f %6.1f%% ", r, $1, $3,
		100 * $1 / $3
		if ($4 == "-") print "         -          -       -"
		else printf "%10.3f %10.3f %6.1f%%\n", $4, $6, 100 * $4 / $6 }' \
		<<<"$n $o"
done
printf "%s\n" "${rows[@]}" | awk "$(cat bench/median.awk)"'
	{ n++; m[n] = $1; s[n] = $1 / $3; ho = $4 != "-"
	  if (ho) { om[n] = $4; os[n] = $4 / $6; r[n] = $1 / $4 } }
	END {
		printf "medians: new %.3f M searches/s, %.1f%% of the bound",
		       med(m, n), 100 * med(s, n)
		if (ho) printf "; old %.3f M/s, %.1f%%; new/old %.3f",
			       med(om, n), 100 * med(os, n), med(r, n)
		print ""
	}'
