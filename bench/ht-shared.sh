#!/usr/bin/env bash
# ht-shared.sh: two smart-bench processes share one Smart-HT table (or,
# with --ds bt, one Smart-BT tree) on one smartd.  P1 creates and preloads the named table, P2 joins it
# (--no-preload) as soon as the preload is recorded; both run the same
# workload for the same time.  Then a third process sweeps the table
# (every key read whole and updated) and drops it, and smartd's memory is
# shown.  Every process must see zero errors and zero validation failures.
#
# Exit status: 0 when every process passed, 1 otherwise, 2 for a bad flag.
set -u
cd "$(dirname "$0")/.."

usage() {
	cat <<EOF
usage: bench/ht-shared.sh [flags]
  --ds ht|bt         the structure: a Smart-HT table or a Smart-BT tree [ht]
  --seconds S        each process's measured window [30]
  --workload W       both processes' workload (smart-bench ycsb) [update-only]
  --keys N           preloaded keys [100000]
  --value-size B     value bytes [8]
  --threads T        threads per process [1]
  --coros C          coroutines per thread [8]
  --blade-size SIZE  smartd's region [256M]
  --bin DIR          where smartd and smart-bench are [build/bin]
  --help             this text
EOF
}

bad() { # bad FLAG WHY: exit 2 naming the flag
	echo "ht-shared.sh: $1: $2" >&2
	exit 2
}

DS=ht SECS=30 WL=update-only KEYS=100000 VSIZE=8 THREADS=1 COROS=8 BLADE=256M
BIN=build/bin
while [ $# -gt 0 ]; do
	case $1 in
	--help|-h) usage; exit 0 ;;
	--ds|--seconds|--workload|--keys|--value-size|--threads|--coros|\
	--blade-size|--bin)
		[ $# -ge 2 ] || bad "$1" "needs a value" ;;
	*) bad "$1" "unknown flag (see --help)" ;;
	esac
	case $1 in
	--ds) [[ $2 =~ ^(ht|bt)$ ]] || bad "$1" "want ht or bt ('$2')"
		DS=$2 ;;
	--seconds) SECS=$2 ;;
	--workload) WL=$2 ;;
	--keys) KEYS=$2 ;;
	--value-size) VSIZE=$2 ;;
	--threads) THREADS=$2 ;;
	--coros) COROS=$2 ;;
	--blade-size) BLADE=$2 ;;
	--bin) BIN=$2 ;;
	esac
	shift 2
done
[ -x "$BIN/smartd" ] && [ -x "$BIN/smart-bench" ] ||
	bad --bin "no smartd and smart-bench in $BIN (build first)"

TMP=$(mktemp -d)
. bench/smartd-lib.sh
trap 'kill_all; rm -rf "$TMP"' EXIT
table=shared-$$
# smart-bench checks every value itself (exit 2 naming the flag)
run=(--table "$table" --keys "$KEYS" --value-size "$VSIZE" --workload "$WL"
     --threads "$THREADS" --coros "$COROS" --seconds "$SECS" --json)

smartd_start "$BLADE" || exit 1
echo "ht-shared: smartd $BLADE on $ADDR; $DS; 2 processes x $THREADS threads x" \
	"$COROS coroutines, $WL, $KEYS keys, $SECS s"
bench_bg "$TMP/p1.json" "$TMP/p1.err" "${run[@]}"
p1=$BG
await_preload "$p1" "$TMP/p1.err" "ht-shared: P1"
bench_bg "$TMP/p2.json" "$TMP/p2.err" "${run[@]}" --no-preload
p2=$BG
wait "$p1"; rc1=$?
wait "$p2"; rc2=$?
bench --table "$table" --keys "$KEYS" --value-size "$VSIZE" --no-preload \
	--workload sweep --drop --json >"$TMP/c.json" 2>"$TMP/c.err"
rc3=$?
mem=$(smartd_memory)

fail=0
for p in p1:$rc1 p2:$rc2; do
	f=$TMP/${p%%:*}.json
	echo "${p%%:*}: $(field "$f" ops) ops in $(field "$f" seconds) s" \
		"($(field "$f" mops) Mops), errors $(field "$f" errors)," \
		"validation failures $(field "$f" validation_failures)," \
		"p50 $(field "$f" p50_us) us, p999 $(field "$f" p999_us) us," \
		"max $(field "$f" max_us) us, round trips/op" \
		"$(field "$f" round_trips_per_op), blocks retired" \
		"$(field "$f" epoch_retired) / freed $(field "$f" epoch_freed)"
	if [ "${p#*:}" != 0 ]; then
		echo "ht-shared: ${p%%:*} failed (status ${p#*:}):" >&2
		cat "$TMP/${p%%:*}.err" >&2
		fail=1
	fi
done
echo "sweep: $(field "$TMP/c.json" swept)/$KEYS keys, errors" \
	"$(field "$TMP/c.json" errors), validation failures" \
	"$(field "$TMP/c.json" validation_failures); table dropped:" \
	"$(field "$TMP/c.json" dropped)"
echo "smartd memory after the drop: $mem"
if [ $rc3 != 0 ]; then
	echo "ht-shared: the sweep failed (status $rc3):" >&2
	cat "$TMP/c.err" >&2
	fail=1
fi
[ $fail = 0 ] && echo "ht-shared: passed"
exit $fail
