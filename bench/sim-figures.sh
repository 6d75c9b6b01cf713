#!/usr/bin/env bash
# The simulator's predictions (docs/sim.md §9, issue 30 part 3): Smart's
# technique-on figures at the paper's scale (96 threads), run in virtual
# time with the FROZEN parameters (fitted on technique-off data only,
# docs/sim.md §2.1).  Every number this script writes is SIMULATED; the
# plots say so and mark only the values the paper's text quotes.
#
# Usage: bench/sim-figures.sh [--quick] [FIGURE...]
#   FIGURE: fig13a fig13b table1 fig14 fig7, or all (the default); plot
#   re-draws the PNGs from the CSVs without running anything.
#   --quick  a small subset (the points that decide the must-show
#            ratios) with shorter windows, into $OUT/quick
#   --help   this text
# Resumable: a point whose row is in its CSV is skipped (delete the row,
# or the CSV, to re-run it).  `bench/sim-figures.sh fig14` re-runs Fig 14
# alone (e.g. after a change of ConflictAvoid): move fig14.csv away first.
# Env: BUILD (default build), OUT (default bench/results/sim), SIM (--sim
#   spec, default "default"), NIC (--nic-model, default "default": the
#   frozen parameters), windows of virtual time per point: SECS (plain,
#   30ms), SECS_THROT (with WorkReqThrot: the tuner's 48-ms update phase
#   first, 100ms), SECS_HT (Fig 14, 50ms), SECS_YCSB (Fig 7, 20ms);
#   TABLE1_INTERVALS (ms, default "8 32 128"), FIG14_SERIES (name=techniques
#   or name=techniques:KEY=VALUE (a library option, as --opt), default: the
#   paper's four series, None, Backoff (conflict_level=1), DynLimit (2) and
#   CA = all of ConflictAvoid (3, the library's default)),
#   the points: T13A (threads), B13B (batches), T14, T7 (threads), W7
#   (Fig 7's workloads, default "a b c").
# Each run's line says its wall time and simulated ops per real second;
# the totals go to $OUT/speed.csv.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

QUICK=
figs=()
for a in "$@"; do
	case $a in
	--help | -h) usage; exit 0 ;;
	--quick) QUICK=1 ;;
	fig13a | fig13b | table1 | fig14 | fig7 | plot) figs+=("$a") ;;
	all) figs+=(fig13a fig13b table1 fig14 fig7) ;;
	*) echo "unknown argument $a (--help)" >&2; exit 2 ;;
	esac
done
[ ${#figs[@]} -gt 0 ] || figs=(fig13a fig13b table1 fig14 fig7)

BUILD=${BUILD:-build}
OUT=${OUT:-bench/results/sim}
SIM=${SIM:-default}
NIC=${NIC:-default}
SECS=${SECS:-30ms}
SECS_THROT=${SECS_THROT:-100ms}
SECS_HT=${SECS_HT:-50ms}
SECS_YCSB=${SECS_YCSB:-20ms}
TABLE1_INTERVALS=${TABLE1_INTERVALS:-8 32 128}
CA_ON=ThrdAwareAlloc,ConflictAvoid
FIG14_SERIES=${FIG14_SERIES:-None=ThrdAwareAlloc Backoff=$CA_ON:conflict_level=1 DynLimit=$CA_ON:conflict_level=2 CA=$CA_ON}
T13A=${T13A:-1 8 16 32 48 64 80 96}
B13B=${B13B:-1 2 4 8 16 32}
T14=${T14:-1 8 16 32 64 96}
T7=${T7:-1 8 16 32 48 64 96}
W7=${W7:-a b c}
if [ -n "$QUICK" ]; then
	OUT=$OUT/quick
	SECS=10ms SECS_THROT=60ms SECS_HT=20ms SECS_YCSB=10ms
	TABLE1_INTERVALS=8
	T13A="1 32 96" B13B="8 32" T14="8 96" T7="8 96"
fi
PERF=$BUILD/bin/smart-perf
BENCH=$BUILD/bin/smart-bench
TITLE="simulated (fitted on technique-off data)"
mkdir -p "$OUT"

# The series of smart-perf (docs/sim.md §9): name -> qp-mode and techniques.
series_args() {
	case $1 in
	qp) echo "--qp-mode per-thread --techniques None" ;;
	db) echo "--qp-mode per-thread-db --techniques ThrdAwareAlloc" ;;
	db-throt) echo "--qp-mode per-thread-db --techniques ThrdAwareAlloc,WorkReqThrot" ;;
	esac
}

# jget F1,F2,...: those fields of the JSON object on stdin, comma-separated.
jget() {
	python3 -c 'import json,sys
j = json.loads(sys.stdin.read().strip().splitlines()[-1])
print(",".join(str(j[k]) for k in sys.argv[1].split(",")))' "$1"
}

now() { date +%s.%N; }

# have CSV KEY: is a row starting with KEY, in CSV?
have() { [ -f "$1" ] && grep -q "^$2," "$1"; }

# header CSV LINE: write the header of a new CSV.
header() { [ -f "$1" ] || echo "$2" >"$1"; }

TOTAL_OPS=0 TOTAL_WALL=0 NPOINTS=0 NSKIP=0
# point FIG CSV KEY CMD...: run CMD (a JSON line out) unless KEY is done;
# appends "KEY,<fields>,wall_s,sim_ops_per_real_s" with FIELDS (global).
point() {
	local fig=$1 csv=$2 key=$3 t0 t1 j vals ops wall rate
	shift 3
	if have "$csv" "$key"; then
		NSKIP=$((NSKIP + 1))
		echo "[$fig] $key: done before, skipped"
		return
	fi
	t0=$(now)
	j=$("$@" --json 2>/dev/null) || {
		echo "[$fig] $key: FAILED: $*" >&2
		return
	}
	t1=$(now)
	vals=$(echo "$j" | jget "$FIELDS")
	ops=$(echo "$j" | jget ops)
	wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	rate=$(awk -v o="$ops" -v w="$wall" 'BEGIN { printf "%.0f", o / (w > 0 ? w : 1) }')
	echo "$key,$vals,$wall,$rate" >>"$csv"
	TOTAL_OPS=$((TOTAL_OPS + ops))
	TOTAL_WALL=$(awk -v a="$TOTAL_WALL" -v b="$wall" 'BEGIN { print a + b }')
	NPOINTS=$((NPOINTS + 1))
	echo "[$fig] $key: $vals ($wall s real, $rate simulated ops per real s)"
}

perf() { # perf SERIES THREADS DEPTH SECONDS [ARGS...]
	local s=$1 t=$2 d=$3 secs=$4
	shift 4
	# shellcheck disable=SC2046
	"$PERF" --sim "$SIM" --nic-model "$NIC" --span 1M --blade-size 64M \
		--threads "$t" --depth "$d" --seconds "$secs" \
		$(series_args "$s") "$@"
}

secs_of() { [ "$1" = db-throt ] && echo "$SECS_THROT" || echo "$SECS"; }

PERF_FIELDS="mops,credit_cap,throttle_phase,db_contended,wqe_misses"
PERF_HEAD="mops,credit_cap,throttle_phase,db_contended,wqe_misses,wall_s,sim_ops_per_real_s"

fig13a() {
	local csv=$OUT/fig13a.csv s t
	header "$csv" "series,threads,depth,$PERF_HEAD"
	FIELDS=$PERF_FIELDS
	for t in $T13A; do
		for s in qp db db-throt; do
			point fig13a "$csv" "$s,$t,16" perf "$s" "$t" 16 "$(secs_of $s)"
		done
	done
}

fig13b() {
	local csv=$OUT/fig13b.csv s b
	header "$csv" "series,threads,depth,$PERF_HEAD"
	FIELDS=$PERF_FIELDS
	for b in $B13B; do
		for s in db db-throt; do
			point fig13b "$csv" "$s,96,$b" perf "$s" 96 "$b" "$(secs_of $s)"
		done
	done
}

table1() {
	local csv=$OUT/table1.csv s i secs
	header "$csv" "series,threads,interval_ms,$PERF_HEAD"
	FIELDS=$PERF_FIELDS
	for i in $TABLE1_INTERVALS; do
		secs=$((4 * i > 64 ? 4 * i : 64))ms
		for s in db db-throt; do
			point table1 "$csv" "$s,96,$i" perf "$s" 96 64 "$secs" \
				--dynamic "$i"
		done
	done
}

ycsb() { # ycsb WORKLOAD THREADS SECONDS [ARGS...]
	local w=$1 t=$2 secs=$3
	shift 3
	"$BENCH" ycsb --sim "$SIM" --transport sim --nic-model "$NIC" \
		--workload "$w" --zipf 0.99 --coros 8 --keys 1000000 \
		--threads "$t" --seconds "$secs" "$@"
}

HT_FIELDS="mops,guarded_retries_per_op,zero_retry_share,backoff_nmax,credit_cap"
HT_HEAD="mops,retries_per_op,zero_retry_share,backoff_nmax,credit_cap,wall_s,sim_ops_per_real_s"

# series_opts SPEC: the --techniques (and --opt) arguments of a Fig 14
# series "name=techniques[:KEY=VALUE]".
series_opts() {
	local t=${1#*=}
	case $t in
	*:*) echo "--techniques ${t%%:*} --opt ${t#*:}" ;;
	*) echo "--techniques $t" ;;
	esac
}

fig14() {
	local csv=$OUT/fig14.csv p t
	header "$csv" "series,threads,$HT_HEAD"
	FIELDS=$HT_FIELDS
	for t in $T14; do
		for p in $FIG14_SERIES; do
			# shellcheck disable=SC2046
			point fig14 "$csv" "${p%%=*},$t" ycsb update-only "$t" \
				"$SECS_HT" --qp-mode per-thread-db $(series_opts "$p")
		done
	done
}

fig7() {
	local csv=$OUT/fig7.csv w t
	header "$csv" "workload,threads,$HT_HEAD"
	FIELDS=$HT_FIELDS
	for t in $T7; do
		for w in $W7; do
			point fig7 "$csv" "$w,$t" ycsb "$w" "$t" "$SECS_YCSB"
		done
	done
}

# ---- plots -------------------------------------------------------------
plot() { # plot PNG TITLE XLABEL YLABEL BODY
	command -v gnuplot >/dev/null || {
		echo "no gnuplot (scripts/install-deps.sh): $1 not drawn" >&2
		return 0
	}
	gnuplot <<EOF
set terminal pngcairo size 900,560 noenhanced
set output "$1"
set title "$2\n$TITLE: not measurements"
set xlabel "$3"
set ylabel "$4"
set key bottom right box opaque
set grid
set datafile separator ","
sel(s, f) = sprintf("< grep '^%s,' '%s'", s, f)
$5
EOF
	echo "wrote $1"
}

plots() {
	local c=$OUT
	[ -f "$c/fig13a.csv" ] && plot "$c/fig13a.png" \
		"Fig 13a: 8-B READ, 16 in flight per thread" threads Mops \
		"set yrange [0:125]; set arrow from graph 0, first 110 to graph 1, first 110 nohead dt 2; set label 'paper text: NIC cap 110 Mops; per-doorbell 1.0-4.3x per-thread QP' at graph 0.02, first 117
plot for [s in 'qp db db-throt'] sel(s, '$c/fig13a.csv') using 2:4 with linespoints title s"
	[ -f "$c/fig13b.csv" ] && plot "$c/fig13b.png" \
		"Fig 13b: 8-B READ, 96 threads" "WRs in flight per thread (batch)" Mops \
		"set logscale x 2; set yrange [0:125]
\$paper << EOD
32,109,55
EOD
plot for [s in 'db db-throt'] sel(s, '$c/fig13b.csv') using 3:4 with linespoints title s, \
 \$paper using 1:2 with points pt 9 ps 2 title 'paper text: throttled 109 (2.0x)', \
 \$paper using 1:3 with points pt 8 ps 2 title 'paper text: unthrottled 55'"
	[ -f "$c/table1.csv" ] && plot "$c/table1.png" \
		"Table 1: 96 x 64, active threads redrawn in [36, 96]" "interval (ms)" Mops \
		"set logscale x 2; set yrange [0:125]
\$paper << EOD
8,100,81
2048,110,66
EOD
plot for [s in 'db db-throt'] sel(s, '$c/table1.csv') using 3:4 with linespoints title s, \
 \$paper using 1:2 with points pt 9 ps 2 title 'paper (printed): throttled', \
 \$paper using 1:3 with points pt 8 ps 2 title 'paper (printed): unthrottled'"
	[ -f "$c/fig14.csv" ] && plot "$c/fig14_ab.png" \
		"Fig 14a/b: Smart-HT update-only, Zipf 0.99, 8 coroutines" threads \
		"Mops (lines) / attempts per op (points, right)" \
		"set y2tics; set ytics nomirror; set logscale y2; set yrange [0:4]; set y2range [1:200]; set key outside below horizontal maxcols 2
\$paper << EOD
96,12.5,1.1,1.4
EOD
plot for [s in 'None Backoff DynLimit CA'] sel(s, '$c/fig14.csv') using 2:3 with linespoints title s.' Mops', \
 for [s in 'None Backoff DynLimit CA'] sel(s, '$c/fig14.csv') using 2:(1+\$4) axes x1y2 with points pt 7 title s.' attempts/op', \
 \$paper using 1:2 axes x1y2 with points pt 8 ps 2 title 'paper text: None 11.5 retries', \
 \$paper using 1:3:3:4 axes x1y2 with yerrorbars pt 9 ps 2 title 'paper text: all CA 1.1-1.4 attempts'"
	[ -f "$c/fig14.csv" ] && plot "$c/fig14_c.png" \
		"Fig 14c: share of updates with no retry" threads "zero-retry share" \
		"set yrange [0:1]
\$paper << EOD
96,0.91
EOD
plot for [s in 'None Backoff DynLimit CA'] sel(s, '$c/fig14.csv') using 2:5 with linespoints title s, \
 \$paper using 1:2 with points pt 9 ps 2 title 'paper: 91% with all of ConflictAvoid'"
	[ -f "$c/fig7.csv" ] && plot "$c/fig7.png" \
		"Fig 7a-c shape: Smart-HT YCSB, 1M keys, Zipf 0.99, 8 coroutines" threads Mops \
		"\$paper << EOD
48,5.7
96,21.2
96,23.7
EOD
plot for [w in 'a b c'] sel(w, '$c/fig7.csv') using 2:3 with linespoints title 'YCSB-'.w, \
 \$paper using 1:2 with points pt 9 ps 2 title 'paper text: A peak 5.7 (48 thr), B 21.2, C 23.7'"
	return 0
}

[ -x "$PERF" ] && [ -x "$BENCH" ] ||
	{ echo "build first: cmake --build $BUILD --target smart-perf smart-bench" >&2; exit 1; }
T0=$(now)
for f in "${figs[@]}"; do
	[ "$f" = plot ] || "$f"
done
plots
T1=$(now)
wall=$(awk -v a="$T0" -v b="$T1" 'BEGIN { printf "%.0f", b - a }')
rate=$(awk -v o="$TOTAL_OPS" -v w="$TOTAL_WALL" 'BEGIN { printf "%.0f", (w > 0 ? o / w : 0) }')
echo "$NPOINTS points run ($NSKIP done before), $wall s wall, $rate simulated ops per real s over the runs"
[ "$NPOINTS" -gt 0 ] || exit 0
header "$OUT/speed.csv" "date,figures,points,skipped,wall_s,sim_ops,sim_ops_per_real_s,load"
echo "$(date -u +%FT%TZ),${figs[*]},$NPOINTS,$NSKIP,$wall,$TOTAL_OPS,$rate,$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' '/')" >>"$OUT/speed.csv"
