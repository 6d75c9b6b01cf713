#!/usr/bin/env bash
# Smart-HT on YCSB under the shm RNIC model (Smart, ASPLOS'24):
#   breakdown  Fig 8-like: YCSB-A, Zipf 0.99, 2 threads x 8 coroutines, the
#              techniques switched on one after the other (None = the RACE
#              baseline, +ThrdAwareAlloc, +WorkReqThrot, +ConflictAvoid);
#              each bar is the median of $REPEAT runs.
#   scaling    Fig 7-like: throughput over threads 1,2 x coroutines
#              1,2,4,8,16, None vs all three techniques.
# Each writes bench/results/ht_<name>.csv and plots ht_<name>.png with
# gnuplot.  The model reproduces SHAPES only: never compare its numbers
# with hardware (docs/nic-model.md).
#
# Usage: bench/ht-ablation.sh [breakdown|scaling|all] ...
#        PLOT_ONLY=1 re-plots the CSVs already in $OUT without measuring.
# Env:   BUILD (build dir, default build), OUT (default bench/results),
#        SECS (seconds per run, default 2), REPEAT (breakdown runs per
#        bar, default 3), KEYS (default 100000), WORKLOAD (default a),
#        NIC (the RNIC model: 2 doorbell registers, 1 dedicated + 1
#          shared, so the two threads share one as 96 threads share
#          mlx5's 16; a 12-entry WQE cache that 2 x 8 outstanding WRs
#          overflow; the default 1 us doorbell hold)
# --help or -h prints this header and exits.
case ${1:-} in -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=${OUT:-bench/results}
SECS=${SECS:-2}
REPEAT=${REPEAT:-3}
KEYS=${KEYS:-100000}
WORKLOAD=${WORKLOAD:-a}
NIC=${NIC:-doorbells=2,wqe_cache=12}
BENCH=$BUILD/bin/smart-bench
ALL=ThrdAwareAlloc,WorkReqThrot,ConflictAvoid
# every part named is checked before any runs (a typo after a long part
# was found only when that part was done; a flag was "build first")
for w in ${*:-all}; do
	case $w in breakdown | scaling | all) ;;
	*) echo "ht-ablation.sh: $w: unknown part (breakdown scaling all; see --help)" >&2; exit 2 ;;
	esac
done
mkdir -p "$OUT"

need() {
	[ -x "$BENCH" ] || { echo "build first: make" >&2; exit 1; }
	command -v gnuplot >/dev/null || scripts/install-deps.sh gnuplot-nox
}

# run ARGS...: one YCSB run on the model; prints its JSON line.  A run
# with errors still prints its JSON (and exits 1): keep the figure.
run() {
	"$BENCH" ycsb --ds ht --workload "$WORKLOAD" --keys "$KEYS" \
		--seconds "$SECS" --nic-model "$NIC" --json "$@" 2>/dev/null || true
}

# fields F...: the named fields of the JSON on stdin, comma-separated
# (nan for a run that printed nothing).
fields() {
	python3 -c 'import json,sys
try:
    d = json.load(sys.stdin)
except ValueError:
    d = {}
print(",".join(str(d.get(f, "nan")) for f in sys.argv[1:]))' "$@"
}

# median: the median line (by the first field) of the CSV lines on stdin.
median() {
	sort -t, -k1,1g | awk '{ l[NR] = $0 } END { print l[int((NR + 1) / 2)] }'
}

plot() { # plot OUTPNG TITLE XLABEL YLABEL SCRIPT-BODY
	gnuplot <<EOF
set terminal pngcairo size 900,560 noenhanced
set output "$1"
set title "$2\n(RNIC model on shm: shapes, not hardware numbers)"
set xlabel "$3"
set ylabel "$4"
set key top left box opaque
set grid
set datafile separator ","
$5
EOF
	echo "wrote $1"
}

breakdown() {
	local csv=$OUT/ht_breakdown.csv
	local F="mops retries_per_op rdma_ops_per_op p99_us errors validation_failures"
	if [ -z "${PLOT_ONLY:-}" ]; then
	echo "step,techniques,mops,retries_per_op,rdma_ops_per_op,p99_us,errors,validation_failures" >"$csv"
	local i=0 o
	for o in None ThrdAwareAlloc ThrdAwareAlloc,WorkReqThrot $ALL; do
		local lines=
		for _ in $(seq "$REPEAT"); do
			lines+="$(run --threads 2 --coros 8 --techniques $o | fields $F)"$'\n'
		done
		local m=$(printf '%s' "$lines" | median)
		local name=${o//,/+}
		[ $i -gt 0 ] && name="+${o##*,}"
		echo "$i,$name,$m" >>"$csv"
		echo "  $name: $m" >&2
		i=$((i + 1))
	done
	fi
	plot "$OUT/ht_breakdown.png" \
		"Fig 8-like: Smart-HT YCSB-$WORKLOAD, Zipf 0.99, 2 threads x 8 coroutines, median of $REPEAT" \
		"techniques (cumulative; None = RACE)" "Mops" \
		"set style fill solid 0.6; set boxwidth 0.6; set yrange [0:*]; set y2range [0:*]; set y2tics; set ytics nomirror; set y2label 'retries per op'; set key top left; plot '$csv' every ::1 using 1:3:xtic(2) with boxes title 'Mops', '' every ::1 using 1:4 axes x1y2 with linespoints pt 7 title 'retries/op'"
}

scaling() {
	local csv=$OUT/ht_scaling.csv
	if [ -z "${PLOT_ONLY:-}" ]; then
	echo "techniques,threads,coros,mops,retries_per_op,rdma_ops_per_op,p99_us,errors" >"$csv"
	local o t c
	for o in None $ALL; do
		for t in 1 2; do
			for c in 1 2 4 8 16; do
				echo "${o//,/+},$t,$c,$(run --threads $t --coros $c --techniques $o |
					fields mops retries_per_op rdma_ops_per_op p99_us errors)" >>"$csv"
			done
		done
	done
	fi
	plot "$OUT/ht_scaling.png" \
		"Fig 7-like: Smart-HT YCSB-$WORKLOAD, Zipf 0.99, threads x coroutines" \
		"coroutines per thread" "Mops" \
		"set logscale x 2; set key below; set yrange [0:*]; plot for [o in 'None ${ALL//,/+}'] for [t=1:2] '$csv' using ((strcol(1) eq o && \$2==t) ? \$3 : 1/0):4 with linespoints title sprintf('%s, %d thread(s)', o, t)"
}

need
what=${*:-all}
[ "$what" = all ] && what="breakdown scaling"
for w in $what; do
	case $w in
	breakdown|scaling) "$w" ;;
	esac
done
