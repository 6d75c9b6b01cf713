#!/usr/bin/env bash
# Paper-shape benchmarks on the shm RNIC model (Smart, ASPLOS'24): each
# figure is a sweep of smart-perf runs written as CSV, then plotted to PNG
# with gnuplot.  The model reproduces SHAPES only: never compare its
# numbers with hardware (docs/nic-model.md).
#
# Usage: bench/paper-figures.sh [fig3|fig4a|fig13b|table1|fig14|all] ...
#        PLOT_ONLY=1 re-plots the CSVs already in $OUT without measuring.
# Env:   BUILD (build dir, default build), OUT (default bench/results),
#        SECS (seconds per point, default 2),
#        NIC_DB (fig3's model: 2 doorbell registers, 1 dedicated + 1 shared,
#          so that 4 threads share as 96 threads share mlx5's 16),
#        NIC_CACHE (fig4a, fig13b, table1: a 16-entry WQE cache, and a short
#          doorbell hold so that the device, not the doorbells, limits),
#        NIC (fig14's model), KEYS (fig14's counters, default 100)
# --help or -h prints this header and exits.
case ${1:-} in -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=${OUT:-bench/results}
SECS=${SECS:-2}
NIC=${NIC:-db_hold_ns=100}
NIC_CACHE=${NIC_CACHE:-wqe_cache=16,db_hold_ns=100}
NIC_DB=${NIC_DB:-doorbells=2}
PERF=$BUILD/bin/smart-perf
# every figure named is checked before any runs (a typo after a long
# figure was found only when it was done; a flag was "build first")
for f in ${*:-all}; do
	case $f in fig3 | fig4a | fig13b | table1 | fig14 | all) ;;
	*) echo "paper-figures.sh: $f: unknown figure (fig3 fig4a fig13b table1 fig14 all; see --help)" >&2; exit 2 ;;
	esac
done
mkdir -p "$OUT"

need() {
	[ -x "$PERF" ] || { echo "build first: make" >&2; exit 1; }
	command -v gnuplot >/dev/null || scripts/install-deps.sh gnuplot-nox
}

# run NAME ARGS...: one smart-perf run; prints its JSON line.
run() {
	"$PERF" --seconds "$SECS" --json "$@"
}

# json FIELD: the value of a field of the JSON on stdin (numbers, strings).
json() {
	python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}

plot() { # plot OUTPNG TITLE XLABEL YLABEL SCRIPT-BODY
	gnuplot <<EOF
set terminal pngcairo size 900,560 noenhanced
set output "$1"
set title "$2\n(RNIC model on shm: shapes, not hardware numbers)"
set xlabel "$3"
set ylabel "$4"
set key top right box opaque
set grid
set datafile separator ","
$5
EOF
	echo "wrote $1"
}

fig3() { # QP allocation modes vs threads (Smart Fig. 3)
	local csv=$OUT/fig3.csv
	if [ -z "${PLOT_ONLY:-}" ]; then
	echo "mode,threads,mops,db_contended" >"$csv"
	for mode in shared mux:2 per-thread per-thread-db; do
		for t in 1 2 3 4; do
			local j=$(run --nic-model "$NIC_DB" --qp-mode $mode \
				--threads $t --depth 8 --techniques None)
			echo "$mode,$t,$(echo "$j" | json mops),$(echo "$j" | json db_contended)" >>"$csv"
		done
	done
	fi
	plot "$OUT/fig3.png" "Fig 3: 8-B READ, depth 8 per thread, by QP mode" \
		threads "Mops" \
		"plot for [m in 'shared mux:2 per-thread per-thread-db'] '$csv' using (strcol(1) eq m ? \$2 : 1/0):3 with linespoints title m"
}

fig4a() { # throughput vs outstanding WRs (Smart Fig. 4a)
	local csv=$OUT/fig4a.csv
	if [ -z "${PLOT_ONLY:-}" ]; then
	echo "threads,depth,mops,wqe_misses" >"$csv"
	for t in 1 2; do
		for d in 1 2 4 8 16 32 64; do
			local j=$(run --nic-model "$NIC_CACHE" --threads $t \
				--depth $d --techniques None)
			echo "$t,$d,$(echo "$j" | json mops),$(echo "$j" | json wqe_misses)" >>"$csv"
		done
	done
	fi
	plot "$OUT/fig4a.png" "Fig 4a: 8-B READ, threads x depth, no throttling" \
		"coroutines (outstanding WRs) per thread" "Mops" \
		"set logscale x 2; plot for [t=1:2] '$csv' using (\$1==t ? \$2 : 1/0):3 with linespoints title sprintf('%d thread(s)', t)"
}

fig13b() { # throttling vs WR batch size (Smart Fig. 13b)
	local csv=$OUT/fig13b.csv
	if [ -z "${PLOT_ONLY:-}" ]; then
	echo "techniques,batch,mops,credit_cap" >"$csv"
	for o in None WorkReqThrot; do
		for b in 1 2 4 8 16; do
			local j=$(run --nic-model "$NIC_CACHE" --threads 2 \
				--depth 16 --batch $b --techniques $o)
			echo "$o,$b,$(echo "$j" | json mops),$(echo "$j" | json credit_cap)" >>"$csv"
		done
	done
	fi
	plot "$OUT/fig13b.png" "Fig 13b: 2 threads x 16 coroutines, WRs per batch" \
		"WRs per batch" "Mops" \
		"set logscale x 2; plot for [o in 'None WorkReqThrot'] '$csv' using (strcol(1) eq o ? \$2 : 1/0):3 with linespoints title o"
}

table1() { # active threads re-drawn every interval (Smart Table 1)
	local csv=$OUT/table1.csv
	if [ -z "${PLOT_ONLY:-}" ]; then
	echo "techniques,interval_ms,mops" >"$csv"
	for o in None WorkReqThrot; do
		for i in 8 32 128 512 2048; do
			local j=$(SECS=$(( SECS > 4 ? SECS : 4 )) run --nic-model "$NIC_CACHE" \
				--threads 2 --depth 32 --dynamic $i --techniques $o)
			echo "$o,$i,$(echo "$j" | json mops)" >>"$csv"
		done
	done
	fi
	plot "$OUT/table1.png" "Table 1: active threads change every interval" \
		"interval (ms)" "Mops" \
		"set logscale x 2; plot for [o in 'None WorkReqThrot'] '$csv' using (strcol(1) eq o ? \$2 : 1/0):3 with linespoints title o"
}

fig14() { # conflict avoidance on update-only Zipf 0.99 (Smart Fig. 14)
	local csv=$OUT/fig14.csv
	if [ -z "${PLOT_ONLY:-}" ]; then
	echo "techniques,depth,mops,retries_per_op" >"$csv"
	for o in None ConflictAvoid; do
		for d in 4 8 16 32; do
			local j=$(run --nic-model "$NIC" --op cas-incr --keys ${KEYS:-100} \
				--zipf 0.99 --threads 2 --depth $d --techniques $o)
			echo "$o,$d,$(echo "$j" | json mops),$(echo "$j" | json retries_per_op)" >>"$csv"
		done
	done
	fi
	plot "$OUT/fig14.png" "Fig 14: CAS-increment, Zipf 0.99, ${KEYS:-100} keys, 2 threads" \
		"coroutines per thread" "Mops (lines) / retries per op (points, right)" \
		"set y2tics; set ytics nomirror; plot for [o in 'None ConflictAvoid'] '$csv' using (strcol(1) eq o ? \$2 : 1/0):3 with linespoints title o.' Mops', for [o in 'None ConflictAvoid'] '$csv' using (strcol(1) eq o ? \$2 : 1/0):4 axes x1y2 with points pt 7 title o.' retries/op'"
}

need
figs=${*:-all}
[ "$figs" = all ] && figs="fig3 fig4a fig13b table1 fig14"
for f in $figs; do
	case $f in
	fig3|fig4a|fig13b|table1|fig14) "$f" ;;
	esac
done
