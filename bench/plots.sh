#!/usr/bin/env bash
# Every headline figure of docs/results.md drawn from CSVs, one PNG each in
# bench/results/plots/ (issue 29): framework vs raw verbs-style posting,
# messaging vs UCX, Smart-DTX vs the FORD baseline, Smart-BT vs the
# Sherman baseline, crash recovery (slowest op of the surviving client
# against its bound), the RNIC-model figures of bench/paper-figures.sh
# (bench/results/*.csv) and the simulator's (bench/results/sim/*.csv).
# Where a CSV holds repeated rounds, a bar is their median and its error
# bar their min..max, each round a dot; the model and simulator CSVs hold
# one run per point (no spread to show).  Legends sit outside the data;
# each PNG carries the commit and the date it was drawn.  A series of the
# simulator's CSVs is picked with grep (its rows interleave the series).
#
# Usage: bench/plots.sh [--run WHAT]... [--rounds N] [--secs S]
#   --run vsraw|dtx|bt|rpc|crash|all   measure first (small runs, shapes
#        only: docs/results.md keeps the measured figures) into
#        bench/results/headline/*.csv; without --run only plots.
#   --rounds N  alternated rounds per measured pair [3]
#   --secs S    seconds per run [1]
# Env: BUILD (build dir, default build), OUT (default bench/results/plots)
# Needs gnuplot (scripts/install-deps.sh installs gnuplot-nox).
# --help or -h prints this header and exits.
case ${1:-} in -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=${OUT:-bench/results/plots}
CSV=bench/results/headline
ROUNDS=3 SECS=1 RUN=()
bad() { echo "plots.sh: $1: $2" >&2; exit 2; }
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || bad "$1" "needs a value (see --help)"
	case $1 in
	--run) [[ $2 =~ ^(vsraw|dtx|bt|rpc|crash|all)$ ]] || bad "$1" "unknown '$2'"
	       RUN+=("$2") ;;
	--rounds) [[ $2 =~ ^[1-9][0-9]*$ ]] || bad "$1" "want a count ('$2')"; ROUNDS=$2 ;;
	--secs) [[ $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] || bad "$1" "want seconds ('$2')"; SECS=$2 ;;
	*) bad "$1" "unknown flag (see --help)" ;;
	esac
	shift 2
done
command -v gnuplot >/dev/null || { echo "plots.sh: needs gnuplot (scripts/install-deps.sh)" >&2; exit 2; }
mkdir -p "$OUT" "$CSV"
STAMP="$(git rev-parse --short HEAD 2>/dev/null || echo unknown) $(date -u +%Y-%m-%d)"
NIC=doorbells=2,wqe_cache=12

# field NAME: a number or string field of the one-line JSON on stdin
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }

# ---- measuring (small runs: the plots' shape) ----
run_vsraw() { # round,series,mops: smart-perf READ 8 B 1 x 8, alternated
	echo "round,series,mops" >"$CSV/vs_raw.csv"
	for ((r = 1; r <= ROUNDS; r++)); do
		for s in smart raw; do
			a=(); [ $s = raw ] && a=(--raw)
			m=$("$BUILD/bin/smart-perf" --seconds "$SECS" --json "${a[@]}" | field mops)
			echo "$r,$s,$m" >>"$CSV/vs_raw.csv"
		done
	done
}
run_dtx() { # workload,round,series,txn_s: Smart-DTX vs FORD (techniques None)
	echo "workload,round,series,txn_s" >"$CSV/dtx_ford.csv"
	for w in smallbank tatp; do
		for ((r = 1; r <= ROUNDS; r++)); do
			for s in Smart-DTX FORD; do
				a=(); [ $s = FORD ] && a=(--techniques None)
				t=$("$BUILD/bin/smart-bench" $w --threads 2 --coros 8 --seconds "$SECS" \
					--nic-model $NIC "${a[@]}" --json | field committed_tps)
				echo "$w,$r,$s,$t" >>"$CSV/dtx_ford.csv"
			done
		done
	done
}
run_bt() { # round,series,mops: Smart-BT vs Sherman (techniques None), YCSB-C
	echo "round,series,mops" >"$CSV/bt_sherman.csv"
	for ((r = 1; r <= ROUNDS; r++)); do
		for s in Smart-BT Sherman; do
			a=(); [ $s = Sherman ] && a=(--techniques None)
			m=$("$BUILD/bin/smart-bench" ycsb --ds bt --workload c --keys 100000 \
				--threads 2 --coros 8 --seconds "$SECS" --nic-model $NIC \
				"${a[@]}" --json | field mops)
			echo "$r,$s,$m" >>"$CSV/bt_sherman.csv"
		done
	done
}
run_rpc() { # size,round,series,value from bench/rpc-vs-ucx.sh's rounds file
	echo "size,round,series,value" >"$CSV/rpc_ucx.csv"
	for size in 32 4096; do
		f=$(bench/rpc-vs-ucx.sh "$BUILD" "$ROUNDS" $size | sed -n 's/.*every figure in \([^)]*\)).*/\1/p')
		awk -v s=$size '{ n[$1]++; v = $1 == "ucx_bw" ? $2 / 1e6 : $1 == "ucx_lat" ? 2 * $2 : $2
			print s "," n[$1] "," $1 "," v }' "$f" >>"$CSV/rpc_ucx.csv"
		rm -f "$f"
	done
}
run_crash() { # script,seed,rounds,max_ms,bound_ms,errors: A's slowest op
	local log n
	echo "script,seed,rounds,max_ms,bound_ms,errors" >"$CSV/crash.csv"
	for seed in 1 2 3; do
		for s in "ht-crash.sh" "ht-crash.sh --ds bt" "dtx-crash.sh"; do
			log=$(bench/$s --rounds 5 --seed $seed --bin "$BUILD/bin" 2>&1) || true
			case $s in ht-crash.sh) n=Smart-HT ;; dtx-crash.sh) n=Smart-DTX ;; *) n=Smart-BT ;; esac
			echo "$log" | awk -v s=$n -v seed=$seed '
				/(slowest|max) [0-9.]+ us; under/ {
					for (i = 1; i <= NF; i++) {
						if ($i == "slowest" || $i == "max") m = $(i + 1)
						if ($i == "errors") e = $(i + 1)
						if ($i == "=") b = $(i + 1) }
					sub(/,/, "", e); sub(/\?/, "", e)
					printf "%s,%d,5,%.1f,%.1f,%s\n", s, seed, m / 1000, b / 1000, e }' \
				>>"$CSV/crash.csv"
		done
	done
}
for w in "${RUN[@]}"; do
	case $w in
	all) run_vsraw; run_dtx; run_bt; run_rpc; run_crash ;;
	*) "run_$w" ;;
	esac
done

# ---- plotting ----
# gp PNG TITLE XLABEL YLABEL BODY: one figure, legend outside the data, the
# commit and date in the corner.
gp() {
	gnuplot <<EOF
set terminal pngcairo size 960,600 noenhanced
set output "$1"
set title "$2"
set xlabel "$3" offset 0,0.5
set ylabel "$4"
set key below
set grid ytics
set datafile separator ","
set label 99 "$STAMP" at screen 0.01,0.02 left font ",9" tc rgb "gray40"
$5
EOF
	echo "wrote $1"
}

# spread CSV KEYCOL VALCOL [FILTER]: "key,median,min,max" per key, in the
# order the keys first appear (FILTER: an awk condition on the row).
spread() {
	awk -F, -v k="$2" -v c="$3" "NR > 1 && (${4:-1}) { if (!(\$k in n)) o[++ko] = \$k; v[\$k, ++n[\$k]] = \$c }
	END { for (i = 1; i <= ko; i++) { key = o[i]; m = n[key]
		for (a = 1; a <= m; a++) s[a] = v[key, a]
		for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++) if (s[b] < s[a]) { t = s[a]; s[a] = s[b]; s[b] = t }
		print key \",\" (m % 2 ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2) \",\" s[1] \",\" s[m] } }" "$1"
}

# dots CSV KEYCOL VALCOL [FILTER]: "index,value" of every row, the index
# of its key in spread's order (each round drawn as a dot on its bar).
dots() {
	awk -F, -v k="$2" -v c="$3" "NR > 1 && (${4:-1}) { if (!(\$k in i)) i[\$k] = n++; print i[\$k] \",\" \$c }" "$1"
}

# bars PNG TITLE YLABEL CSV KEYCOL VALCOL [FILTER] [GNUPLOT]: median bars,
# min..max error bars and each round a dot; GNUPLOT: extra settings (a log
# scale: the default y range starts at 0).
bars() {
	local d p
	d=$(mktemp) p=$(mktemp)
	spread "$4" "$5" "$6" "${7:-1}" >"$d"
	dots "$4" "$5" "$6" "${7:-1}" >"$p"
	gp "$1" "$2" "" "$3" "set style fill solid 0.5
set boxwidth 0.6
set yrange [0:*]
set xrange [-0.6:*]
${8:-}
plot '$d' using 0:2:xtic(1) with boxes lc rgb '#4a7ebb' title 'median of rounds', \
     '$d' using 0:2:3:4 with yerrorbars lc rgb 'black' pt 0 title 'min..max of rounds', \
     '$p' using 1:2 with points pt 6 ps 0.8 lc rgb '#c05000' title 'one round'"
	rm -f "$d" "$p"
}

headline() {
	local f=$CSV/vs_raw.csv
	[ -s $f ] && bars "$OUT/vs_raw.png" \
		"Smart vs raw posting (smart-perf --vs-raw): READ 8 B, 1 thread x depth 8, shm\n$(($(wc -l <$f) / 2)) alternated rounds of each" \
		"Mops" $f 2 3
	f=$CSV/dtx_ford.csv
	if [ -s $f ]; then
		bars "$OUT/dtx_ford_smallbank.png" \
			"SmallBank: Smart-DTX vs the FORD-style baseline (techniques None)\n2 threads x 8 coroutines, RNIC model $NIC, alternated rounds" \
			"committed txn/s" $f 3 4 '$1 == "smallbank"'
		bars "$OUT/dtx_ford_tatp.png" \
			"TATP: Smart-DTX vs the FORD-style baseline (techniques None)\n2 threads x 8 coroutines, RNIC model $NIC, alternated rounds" \
			"committed txn/s" $f 3 4 '$1 == "tatp"'
	fi
	f=$CSV/bt_sherman.csv
	[ -s $f ] && bars "$OUT/bt_sherman.png" \
		"YCSB-C, 100 000 keys: Smart-BT vs the Sherman-style baseline (techniques None)\n2 threads x 8 coroutines, RNIC model $NIC, alternated rounds" \
		"Mops" $f 2 3
	f=$CSV/rpc_ucx.csv
	if [ -s $f ]; then
		bars "$OUT/rpc_ucx_echo.png" \
			"Echo round trip (p50): Smart messaging vs UCX (ucp_am_lat x 2), shm, 32 B and 4 KiB\nbench/rpc-vs-ucx.sh rounds" \
			"us per round trip (log scale)" $f 3 4 '$3 ~ /lat|rtt/ && ($3 = ($3 == "ucx_lat" ? "UCX " : "Smart ") $1 " B")' \
			"set logscale y
set yrange [0.1:100]"
		bars "$OUT/rpc_ucx_oneway.png" \
			"One-way message rate: Smart messaging vs UCX (ucp_am_bw), shm, 32 B and 4 KiB\nbench/rpc-vs-ucx.sh rounds" \
			"M msg/s (log scale)" $f 3 4 '$3 ~ /bw/ && ($3 = ($3 == "ucx_bw" ? "UCX " : "Smart ") $1 " B")' \
			"set logscale y
set yrange [0.01:20]"
	fi
	f=$CSV/crash.csv
	[ -s $f ] && crash $f
}

# crash CSV: per script, the slowest op of the surviving client A in each
# seeded run (dots), their median (bar), and the bound lease + lease/8.
crash() {
	local b d p
	b=$(awk -F, 'NR == 2 { print $5 }' "$1")
	d=$(mktemp) p=$(mktemp)
	spread "$1" 1 4 >"$d"
	dots "$1" 1 4 >"$p"
	gp "$OUT/crash.png" \
		"Crash recovery: the surviving client's slowest op while others are SIGKILLed\nbench/ht-crash.sh, ht-crash.sh --ds bt (two trees), dtx-crash.sh: 5 kills a run, 3 seeds" \
		"" "ms (log scale)" "set style fill solid 0.5
set boxwidth 0.6
set logscale y
set yrange [0.5:2000]
set xrange [-0.6:2.6]
plot '$d' using 0:2:xtic(1) with boxes lc rgb '#4a7ebb' title 'median of runs', \
     '$d' using 0:2:3:4 with yerrorbars lc rgb 'black' pt 0 title 'min..max of runs', \
     '$p' using 1:2 with points pt 6 ps 0.8 lc rgb '#c05000' title 'one run (a tree, for BT)', \
     $b with lines lw 2 dt 2 lc rgb '#c03030' title 'bound: lease + lease/8'"
	rm -f "$d" "$p"
}

# ---- the RNIC-model figures (bench/paper-figures.sh's CSVs) ----
MODEL="RNIC model on shm: shapes, not hardware numbers; one run a point"
model() {
	local r=bench/results
	gp "$OUT/model_fig3.png" "QP allocation vs threads (Smart Fig. 3)\n$MODEL" threads Mops \
		"set logscale x 2
plot for [m in 'shared per-thread per-thread-db mux:2'] '$r/fig3.csv' using (strcol(1) eq m ? \$2 : NaN):3 with linespoints title m"
	gp "$OUT/model_fig4a.png" "WQE-cache misses: throughput vs depth (Smart Fig. 4a)\n$MODEL" "depth per thread" Mops \
		"set logscale x 2
plot for [t in '1 2'] '$r/fig4a.csv' using (strcol(1) eq t ? \$2 : NaN):3 with linespoints title t.' thread(s)'"
	gp "$OUT/model_fig13b.png" "Work-request throttling vs batch (Smart Fig. 13b)\n$MODEL" batch Mops \
		"set logscale x 2
plot for [t in 'None WorkReqThrot'] '$r/fig13b.csv' using (strcol(1) eq t ? \$2 : NaN):3 with linespoints title t"
	gp "$OUT/model_table1.png" "Throttle interval (Smart Table 1)\n$MODEL" "interval ms" Mops \
		"set logscale x 2
plot for [t in 'None WorkReqThrot'] '$r/table1.csv' using (strcol(1) eq t ? \$2 : NaN):3 with linespoints title t"
	gp "$OUT/model_fig14.png" "Conflict avoidance: retries per op vs depth (Smart Fig. 14)\n$MODEL" depth "retries per op" \
		"set logscale x 2
plot for [t in 'None ConflictAvoid'] '$r/fig14.csv' using (strcol(1) eq t ? \$2 : NaN):4 with linespoints title t"
	gp "$OUT/model_ht_scaling.png" "Smart-HT YCSB scaling\n$MODEL" "threads x coroutines (log 2)" Mops \
		"set logscale x 2
plot for [t in 'None ThrdAwareAlloc+WorkReqThrot+ConflictAvoid'] for [th=1:2] '$r/ht_scaling.csv' using (strcol(1) eq t && \$2 == th ? \$2 * \$3 : NaN):4 with linespoints title sprintf('%s, %d thread(s)', t, th)"
	gp "$OUT/model_ht_breakdown.png" "Smart-HT: techniques added one at a time\n$MODEL" "" Mops \
		"set style fill solid 0.5
set boxwidth 0.6
set yrange [0:*]
set xtics rotate by -20
plot '$r/ht_breakdown.csv' using 1:3:xtic(2) every ::1 with boxes title 'one run'"
}

# ---- the simulator's figures (bench/sim-figures.sh's CSVs) ----
SIM="simulator (docs/sim.md); one run a point"
sim() {
	local r=bench/results/sim
	gp "$OUT/sim_calibration.png" "Simulator vs the paper's curves (calibration)\n$SIM" "paper Mops" "simulated Mops" \
		"set logscale xy
set size ratio -1
plot '$r/calibration.csv' using 5:4 every ::1 with points pt 7 title 'one curve point', x with lines dt 2 title 'y = x'"
	gp "$OUT/sim_fig13a.png" "Doorbell modes vs threads (Smart Fig. 13a)\n$SIM" threads Mops \
		"set logscale x 2
plot for [s in 'qp db db-throt'] '< grep ^'.s.', $r/fig13a.csv' using 2:4 with linespoints title s"
	gp "$OUT/sim_fig14.png" "Conflict avoidance vs threads (Smart Fig. 14)\n$SIM" threads "retries per op" \
		"set logscale x 2
plot for [s in 'None CA'] '< grep ^'.s.', $r/fig14.csv' using 2:4 with linespoints title s"
}

headline
model
sim
