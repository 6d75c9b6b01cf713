#!/usr/bin/env bash
# dtx-crash.sh: SmallBank clients killed with SIGKILL at random moments
# must cost a Smart-DTX database nothing (docs/dtx.md §5; docs/design.md §10.3).
#
# Two smartds on 127.0.0.1 (one secret file, mode 0600, a short lease,
# regions a few times the live data) hold a SmallBank database with one
# backup of each table on the other blade.  Every client runs with
# --ledger: each deposit also adds to a ledger row of its task in the same
# transaction, so the balances minus the ledger stay what was loaded
# whoever dies.  A creates and loads the database, then runs SmallBank
# for the whole experiment.  ROUNDS times, B (2 threads x 8 coroutines)
# joins and is killed with SIGKILL after a random MIN..MAX ms (bash's
# RANDOM, seeded; the seed is printed), mostly in the middle of commits;
# then a recoverer K joins, meets B's locks and resolves B's transactions
# (rolls them back or forward), and is killed too after a random MIN..2 x
# MIN ms, often inside those recoveries; then C, a fresh client, runs
# beside A for a moment: it must commit with no error.  At the end A stops and checks (no error, money as at its
# start, backups equal, no lock held), R resolves whatever is left and
# checks the same against the load's money, and each smartd's used memory
# must be what it was before the rounds.  A's slowest transaction (its
# retries included) is compared with lease_ms + lease_ms/8: a dead client
# stops nobody for longer.
#
# Exit status: 0 when everything above held; 1 otherwise; 2 for a bad flag.
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
  --accounts N      SmallBank accounts [100000]
  --recoverers 0|1  after each B, a K killed inside its recoveries [1]
  --blade-size SIZE each smartd's region [3 x the live data, + 16M]
  --bin DIR         where smartd and smart-bench are [build/bin]
  --help            this text
EOF2
}

bad() { echo "dtx-crash.sh: $1: $2" >&2; exit 2; }
num() { [[ $2 =~ ^[0-9]+$ ]] || bad "$1" "want a non-negative integer ('$2')"; }

ROUNDS=50 SEED=$(( $(date +%s) % 100000 )) LEASE=500 MIN_MS=50 MAX_MS=500
ACCOUNTS=100000 BLADE= BIN=build/bin RECOVERERS=1
while [ $# -gt 0 ]; do
	case $1 in
	--help|-h) usage; exit 0 ;;
	--rounds|--seed|--lease-ms|--min-ms|--max-ms|--accounts|--blade-size|\
	--bin|--recoverers)
		[ $# -ge 2 ] || bad "$1" "needs a value" ;;
	*) bad "$1" "unknown flag (see --help)" ;;
	esac
	case $1 in
	--bin) BIN=$2 ;;
	--blade-size) BLADE=$2 ;;
	--recoverers) [[ $2 =~ ^[01]$ ]] || bad "$1" "want 0 or 1 ('$2')"
		RECOVERERS=$2 ;;
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
# a blade holds one table's primary and the other's backup: 2 x accounts
# records of 48 bytes at half load (buckets of 8 for 4), and the logs
BLADE=${BLADE:-$(( (ACCOUNTS * 2 * 96 * 3 >> 20) + 16 ))M}

TMP=$(mktemp -d)
. bench/smartd-lib.sh
trap 'kill_all; rm -rf "$TMP"' EXIT
RANDOM=$SEED
DB=crash-$$
HOT=$(( ACCOUNTS < 4000 ? ACCOUNTS : 4000 ))

smartd_start "$BLADE" --lease-ms "$LEASE" || exit 1
ADDR0=$ADDR
"$BIN/smartd" --size "$BLADE" --listen 127.0.0.1:0 --secret-file "$SECRET" \
	--id 1 --lease-ms "$LEASE" >"$TMP/smartd1.log" 2>&1 &
PID1=$!
PIDS+=("$PID1")
wait_for "$TMP/smartd1.log" "serving" 10 "$PID1" || {
	echo "the second smartd did not start:" >&2
	cat "$TMP/smartd1.log" >&2
	exit 1
}
ADDR1=$(sed -n 's/.* on \([0-9.]*:[0-9]*\) .*/\1/p' "$TMP/smartd1.log")
SB=("$BIN/smart-bench" smallbank --connect "$ADDR0" --connect "$ADDR1"
    --secret-file "$SECRET" --name "$DB" --accounts "$ACCOUNTS" --hot "$HOT"
    --replicas 1 --ledger)
sb_bg() { # sb_bg OUT ERR ARGS...: a client in the background; BG its pid
	# (smart-bench's own, so that SIGKILL reaches it, not a subshell)
	local out=$1 err=$2
	shift 2
	"${SB[@]}" "$@" >"$out" 2>"$err" &
	BG=$!
	PIDS+=("$BG")
}
mem() { # mem: both smartds' used memory
	echo "$(smartd_memory) | $(smartd_memory "$TMP/smartd1.log" "$PID1")"
}
used() { # used LINE: the two "N used" figures of a mem line
	grep -o "[0-9.]* used" <<<"$1" | tr '\n' ' '
}

echo "dtx-crash: seed $SEED, $ROUNDS rounds, lease $LEASE ms, $ACCOUNTS" \
	"accounts, smartds of $BLADE, B killed at $MIN_MS..$MAX_MS ms"
mem_start=$(mem)
"${SB[@]}" --keep --txns 1 --check --json >"$TMP/load.json" \
	2>"$TMP/load.err" || {
	echo "dtx-crash: the load failed:" >&2
	cat "$TMP/load.err" >&2
	exit 1
}
# the money: balances minus the ledger rows, what was loaded, whoever dies
money=$(field "$TMP/load.json" money_end)
[ -n "$money" ] || { echo "dtx-crash: no money in the load's JSON" >&2; exit 1; }
mem_before=$(mem)

# A: runs (and checks at its end) for the whole experiment
sb_bg "$TMP/a.json" "$TMP/a.err" --open --keep --threads 1 --coros 8 \
	--seconds 86000 --check --json
apid=$BG
sleep 1

fails=0 early=0 ccommits=0 clocks=0 kills=0
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
	if [ $RECOVERERS = 1 ]; then
		sb_bg "$TMP/k.out" "$TMP/k.err" --open --keep --threads 1 \
			--coros 8 --seconds 86000
		ms=$(( MIN_MS + RANDOM % (MIN_MS + 1) ))
		sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
		if kill -0 "$BG" 2>/dev/null; then
			kill -9 "$BG"
			wait "$BG" 2>/dev/null
			kills=$((kills + 1))
		else
			wait "$BG"
			echo "dtx-crash: round $r: K exited before its kill:" >&2
			cat "$TMP/k.err" >&2
			early=$((early + 1))
		fi
	fi
	# C: a fresh client beside A must get on with its work
	if ! "${SB[@]}" --open --keep --threads 1 --coros 4 --seconds 0.2 \
		--json >"$TMP/c.json" 2>"$TMP/c.err" ||
	   [ "$(field "$TMP/c.json" errors)" != 0 ]; then
		echo "dtx-crash: round $r: C failed:" >&2
		cat "$TMP/c.err" >&2
		fails=$((fails + 1))
	fi
	n=$(field "$TMP/c.json" committed)
	ccommits=$((ccommits + ${n:-0}))
	n=$(field "$TMP/c.json" dtx_locks_recovered)
	clocks=$((clocks + ${n:-0}))
	if ! kill -0 "$apid" 2>/dev/null; then
		echo "dtx-crash: round $r: A is gone:" >&2
		cat "$TMP/a.err" >&2
		exit 1
	fi
done
kill -TERM "$apid"
wait "$apid"
arc=$?

# R: what is left resolved; the database whole, the money as loaded
"${SB[@]}" --recover --check --json >"$TMP/r.json" 2>"$TMP/r.err"
rrc=$?
mem_after=$(mem)

a_max=$(field "$TMP/a.json" max_us)
bound=$(( LEASE * 1000 + LEASE * 1000 / 8 ))
under=$(awk -v m="${a_max:-1e99}" -v b="$bound" 'BEGIN { print (m < b) ? "yes" : "NO" }')
echo "rounds: $ROUNDS B processes killed at $MIN_MS..$MAX_MS ms, $kills" \
	"recoverers killed after them ($early exited before their kill);" \
	"C: $ccommits transactions by fresh" \
	"clients, $fails failed"
echo "A: $(field "$TMP/a.json" committed) transactions," \
	"$(field "$TMP/a.json" committed_tps) /s, errors" \
	"$(field "$TMP/a.json" errors), check $(field "$TMP/a.json" check)," \
	"slowest ${a_max:-?} us; under lease_ms + lease_ms/8 = $bound us: $under"
echo "dead clients' locks resolved: A $(field "$TMP/a.json" dtx_locks_recovered)" \
	"(transactions rolled back $(field "$TMP/a.json" dtx_rolled_back)," \
	"forward $(field "$TMP/a.json" dtx_rolled_forward)), C $clocks"
echo "R: $(field "$TMP/r.json" recovered_locks) locks of dead clients" \
	"resolved at the end, check $(field "$TMP/r.json" check); money" \
	"(balances minus ledger) $(field "$TMP/r.json" money_start) cents," \
	"loaded $money"
echo "smartd memory before the load:   $mem_start"
echo "smartd memory before the rounds: $mem_before"
echo "smartd memory after the rounds:  $mem_after"
ok=1
[ $arc = 0 ] && [ "$(field "$TMP/a.json" errors)" = 0 ] &&
	[ "$(field "$TMP/a.json" check)" = pass ] || {
	echo "dtx-crash: A failed (status $arc):" >&2
	cat "$TMP/a.err" >&2
	ok=0
}
[ $rrc = 0 ] && [ "$(field "$TMP/r.json" money_start)" = "$money" ] || {
	echo "dtx-crash: R failed (status $rrc):" >&2
	cat "$TMP/r.err" >&2
	ok=0
}
[ "$(used "$mem_before")" = "$(used "$mem_after")" ] || {
	echo "dtx-crash: memory used changed over the rounds" >&2
	ok=0
}
[ $fails = 0 ] && [ $early = 0 ] && [ "$under" = yes ] || ok=0
[ $ok = 1 ] || exit 1
echo "dtx-crash: passed"
