#!/usr/bin/env bash
# dtx-crash.sh: SmallBank clients killed with SIGKILL at random moments
# must cost a Smart-DTX database nothing (docs/dtx.md §5; DESIGN.md §9).
#
# Two smartds on 127.0.0.1 (one secret file, mode 0600, a short lease)
# hold a SmallBank database with one backup of each table on the other
# blade; a first client creates and loads it.  Every client runs with
# --ledger: each deposit also adds to a ledger row of its task in the same
# transaction, so that the balances minus the ledger stay what was loaded
# whoever dies.  ROUNDS times: B runs
# SmallBank (2 threads x 8 coroutines) and is killed with SIGKILL after a
# random MIN..MAX ms (bash's RANDOM, seeded; the seed is printed), mostly
# in the middle of commits; then R, a fresh client, resolves what B left
# (smart_dtx_recover over every blade) and checks the database: every
# record whole, every backup equal to its primary, no lock held, the money
# as loaded (a killed transaction rolled back or forward whole); then C,
# another fresh client, runs SmallBank for a moment and checks that the
# money moved by exactly its committed transactions' deltas and that the
# database is clean again.  R runs again while B's locks still look alive
# (the blade fences a killed client when it sees its session end, a moment
# after the kill); the time from the kill to R's clean check is compared
# with the bound lease_ms + lease_ms/8.
#
# Exit status: 0 when every round's R and C passed; 1 otherwise; 2 for a
# bad flag.
set -u
cd "$(dirname "$0")/.."

usage() {
	cat <<EOF2
usage: bench/dtx-crash.sh [flags]
  --rounds N        B processes killed, one after the other [50]
  --seed N          seed of the kill times [the time of day]
  --lease-ms MS     smartd's lease [500]
  --min-ms MS       earliest kill after B starts [50]
  --max-ms MS       latest kill after B starts [500]
  --accounts N      SmallBank accounts [10000]
  --bin DIR         where smartd and smart-bench are [build/bin]
  --help            this text
EOF2
}

bad() { echo "dtx-crash.sh: $1: $2" >&2; exit 2; }
num() { [[ $2 =~ ^[0-9]+$ ]] || bad "$1" "want a non-negative integer ('$2')"; }

ROUNDS=50 SEED=$(( $(date +%s) % 100000 )) LEASE=500 MIN_MS=50 MAX_MS=500
ACCOUNTS=10000 BIN=build/bin
while [ $# -gt 0 ]; do
	case $1 in
	--help|-h) usage; exit 0 ;;
	--rounds|--seed|--lease-ms|--min-ms|--max-ms|--accounts|--bin)
		[ $# -ge 2 ] || bad "$1" "needs a value" ;;
	*) bad "$1" "unknown flag (see --help)" ;;
	esac
	case $1 in
	--bin) BIN=$2 ;;
	*) num "$1" "$2"
	   case $1 in
	   --rounds) ROUNDS=$2 ;; --seed) SEED=$2 ;; --lease-ms) LEASE=$2 ;;
	   --min-ms) MIN_MS=$2 ;; --max-ms) MAX_MS=$2 ;; --accounts) ACCOUNTS=$2 ;;
	   esac ;;
	esac
	shift 2
done
[ "$MAX_MS" -ge "$MIN_MS" ] || bad --max-ms "below --min-ms ($MAX_MS < $MIN_MS)"
[ "$ACCOUNTS" -ge 2 ] || bad --accounts "want at least 2"
[ -x "$BIN/smartd" ] && [ -x "$BIN/smart-bench" ] ||
	bad --bin "no smartd and smart-bench in $BIN (build first)"

TMP=$(mktemp -d)
. bench/smartd-lib.sh
trap 'kill_all; rm -rf "$TMP"' EXIT
RANDOM=$SEED
DB=crash-$$
HOT=$(( ACCOUNTS < 4000 ? ACCOUNTS : 4000 ))

smartd_start 256M --lease-ms "$LEASE" || exit 1
ADDR0=$ADDR
"$BIN/smartd" --size 256M --listen 127.0.0.1:0 --secret-file "$SECRET" \
	--id 1 --lease-ms "$LEASE" >"$TMP/smartd1.log" 2>&1 &
PIDS+=("$!")
wait_for "$TMP/smartd1.log" "serving" 10 "$!" || {
	echo "the second smartd did not start:" >&2
	cat "$TMP/smartd1.log" >&2
	exit 1
}
ADDR1=$(sed -n 's/.* on \([0-9.]*:[0-9]*\) .*/\1/p' "$TMP/smartd1.log")

sb() { # sb ARGS...: smart-bench smallbank --ledger against both blades
	"$BIN/smart-bench" smallbank --connect "$ADDR0" --connect "$ADDR1" \
		--secret-file "$SECRET" --name "$DB" --accounts "$ACCOUNTS" \
		--hot "$HOT" --replicas 1 --ledger "$@"
}
sb_bg() { # sb_bg OUT ERR ARGS...: the same in the background; BG its pid
	# (smart-bench's own, so that SIGKILL reaches it, not a subshell)
	local out=$1 err=$2
	shift 2
	"$BIN/smart-bench" smallbank --connect "$ADDR0" --connect "$ADDR1" \
		--secret-file "$SECRET" --name "$DB" --accounts "$ACCOUNTS" \
		--hot "$HOT" --replicas 1 --ledger "$@" >"$out" 2>"$err" &
	BG=$!
	PIDS+=("$BG")
}

echo "dtx-crash: seed $SEED, $ROUNDS rounds, lease $LEASE ms, $ACCOUNTS" \
	"accounts, B killed at $MIN_MS..$MAX_MS ms"
sb --keep --txns 1 --check --json >"$TMP/load.json" 2>"$TMP/load.err" || {
	echo "dtx-crash: the load failed:" >&2
	cat "$TMP/load.err" >&2
	exit 1
}

# the money: balances minus the ledger rows (--ledger), what was loaded,
# whoever dies: a transaction half committed would change it
money=$(field "$TMP/load.json" money_end)
[ -n "$money" ] || { echo "dtx-crash: no money in the load's JSON" >&2; exit 1; }
bound=$(( LEASE + LEASE / 8 ))
fails=0 early=0 rmax=0 found=0 ccommits=0 tries=0
for ((r = 1; r <= ROUNDS; r++)); do
	sb_bg "$TMP/b.out" "$TMP/b.err" --open --keep --threads 2 --coros 8 \
		--seconds 86000
	bpid=$BG
	ms=$(( MIN_MS + RANDOM % (MAX_MS - MIN_MS + 1) ))
	sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
	if kill -0 "$bpid" 2>/dev/null; then
		kill -9 "$bpid"
		wait "$bpid" 2>/dev/null
	else
		wait "$bpid"
		echo "dtx-crash: round $r: B exited before its kill:" >&2
		cat "$TMP/b.err" >&2
		early=$((early + 1))
	fi
	# R until the blade has fenced B (its session's end, seen a moment
	# after the kill) and the locks are resolved; bounded by the lease
	t0=$(date +%s%N)
	for ((try = 0; ; try++)); do
		sb --recover --check --json >"$TMP/r.json" 2>"$TMP/r.err" &&
			break
		rms=$(( ($(date +%s%N) - t0) / 1000000 ))
		if [ "$rms" -gt $((bound * 4)) ]; then
			echo "dtx-crash: round $r: R failed for $rms ms:" >&2
			cat "$TMP/r.err" >&2
			fails=$((fails + 1))
			break
		fi
		sleep 0.02
	done
	rms=$(( ($(date +%s%N) - t0) / 1000000 ))
	tries=$((tries + try))
	[ "$rms" -gt "$rmax" ] && rmax=$rms
	m=$(field "$TMP/r.json" money_start)
	if [ "$m" != "$money" ]; then
		echo "dtx-crash: round $r: money after recovery $m, loaded" \
			"$money" >&2
		fails=$((fails + 1))
	fi
	n=$(field "$TMP/r.json" recovered_locks)
	found=$((found + ${n:-0}))
	if ! sb --open --keep --threads 1 --coros 8 --seconds 0.3 --check \
		--json >"$TMP/c.json" 2>"$TMP/c.err"; then
		echo "dtx-crash: round $r: C failed:" >&2
		cat "$TMP/c.err" >&2
		fails=$((fails + 1))
	fi
	m=$(field "$TMP/c.json" money_end)
	if [ "$m" != "$money" ]; then
		echo "dtx-crash: round $r: money after C $m, loaded $money" >&2
		fails=$((fails + 1))
	fi
	n=$(field "$TMP/c.json" committed)
	ccommits=$((ccommits + ${n:-0}))
done
sb --open --recover --check --json >"$TMP/end.json" 2>"$TMP/end.err" ||
	fails=$((fails + 1))

echo "rounds: $ROUNDS B processes killed at $MIN_MS..$MAX_MS ms ($early" \
	"exited before their kill)"
echo "R: locks of dead clients resolved: $found in all; $tries R runs" \
	"found B not yet fenced (locks alive) and ran again; the clean check" \
	"at most $rmax ms after the kill (fresh processes: start, connect," \
	"recover, check);" \
	"bound lease_ms + lease_ms/8 = $bound ms:" \
	"$([ "$rmax" -le "$bound" ] && echo yes || echo NO)"
echo "money (balances minus ledger): $money cents after the load, after" \
	"every R and every C"
echo "C: $ccommits transactions committed by fresh clients, money and" \
	"replicas checked after each"
echo "failures: $fails"
[ "$fails" = 0 ] && [ "$early" = 0 ] || exit 1
echo "dtx-crash: passed"
