#!/usr/bin/env bash
# ht-crash.sh: clients killed at random moments must cost a shared Smart-HT
# table (or, with --ds bt, a Smart-BT tree) nothing (DESIGN.md §9,
# "sustained load on small blades").
#
# One smartd on 127.0.0.1 (a fresh secret file, mode 0600, a short lease)
# holds a named table.  Process A creates and preloads it, then updates it
# for the whole experiment.  ROUNDS times, process B joins the table
# (--no-preload) with a workload that inserts (so it holds tentative slots
# and sometimes a split) and is killed with SIGKILL after a random 50..500
# ms (bash's RANDOM, seeded; the seed is printed).  Then C sweeps the
# table: every preloaded key read whole and updated; after A stops, D
# sweeps again and drops the table.  A, C and D must see no error and no
# validation failure; A's slowest op is compared with the
# bound lease_ms + lease_ms/8 (a dead client stops nobody for longer).
#
# Exit status: 0 when A and C saw no error; 1 otherwise (or a process
# failed); 2 for a bad flag.
set -u
cd "$(dirname "$0")/.."

usage() {
	cat <<EOF
usage: bench/ht-crash.sh [flags]
  --ds ht|bt        the structure: a Smart-HT table or a Smart-BT tree [ht]
  --rounds N        B processes killed, one after the other [50]
  --seed N          seed of the kill times [the time of day]
  --lease-ms MS     smartd's lease [500]
  --min-ms MS       earliest kill after B starts [50]
  --max-ms MS       latest kill after B starts [500]
  --freeze          stop B (SIGSTOP) at that moment and kill it a lease and a
                    half later: its locks must then be taken over by lease
                    expiry, not by the blade seeing its session drop
  --keys N          preloaded keys [20000]
  --insert-room N   new keys the table can grow to hold [rounds x max-ms x 30/ms]
  --blade-size SIZE smartd's region [3 x the most live data, + 64M]
  --dm-size SIZE    smartd's device memory (bt: the lock table goes there;
                    shm emulates it) [auto: none on shm]
  --a-workload W    A's workload [update-only]
  --b-workload W    B's workload [d]
  --bin DIR         where smartd and smart-bench are [build/bin]
  --help            this text
Prints the rounds, A's ops, errors and slowest op against the bound, C's
sweep, D's sweep and drop, and smartd's memory before the table, before
the rounds, after C and after the drop.
EOF
}

bad() { # bad FLAG WHY: exit 2 naming the flag
	echo "ht-crash.sh: $1: $2" >&2
	exit 2
}

ROUNDS=50 SEED=$(( $(date +%s) % 100000 )) LEASE=500 MIN_MS=50 MAX_MS=500
FREEZE=0 DS=ht KEYS=20000 ROOM= BLADE= DM=auto AW=update-only BW=d BIN=build/bin
num() { # num FLAG VALUE: VALUE must be a non-negative integer
	[[ $2 =~ ^[0-9]+$ ]] || bad "$1" "want a non-negative integer ('$2')"
}
while [ $# -gt 0 ]; do
	case $1 in
	--help|-h) usage; exit 0 ;;
	--freeze) FREEZE=1; shift; continue ;;
	--ds|--rounds|--seed|--lease-ms|--min-ms|--max-ms|--keys|\
	--insert-room|--blade-size|--dm-size|--a-workload|--b-workload|--bin)
		[ $# -ge 2 ] || bad "$1" "needs a value" ;;
	*) bad "$1" "unknown flag (see --help)" ;;
	esac
	case $1 in
	--ds) [[ $2 =~ ^(ht|bt)$ ]] || bad "$1" "want ht or bt ('$2')"
		DS=$2 ;;
	--rounds) num "$1" "$2"; ROUNDS=$2 ;;
	--seed) num "$1" "$2"; SEED=$2 ;;
	--lease-ms) num "$1" "$2"; LEASE=$2 ;;
	--min-ms) num "$1" "$2"; MIN_MS=$2 ;;
	--max-ms) num "$1" "$2"; MAX_MS=$2 ;;
	--keys) num "$1" "$2"; KEYS=$2 ;;
	--insert-room) num "$1" "$2"; ROOM=$2 ;;
	--blade-size) BLADE=$2 ;;
	--dm-size) DM=$2 ;;
	--a-workload) AW=$2 ;;
	--b-workload) BW=$2 ;;
	--bin) BIN=$2 ;;
	esac
	shift 2
done
[ "$MAX_MS" -ge "$MIN_MS" ] || bad --max-ms "below --min-ms ($MAX_MS < $MIN_MS)"
[ "$KEYS" -gt 0 ] || bad --keys "want at least 1"
[ -x "$BIN/smartd" ] && [ -x "$BIN/smart-bench" ] ||
	bad --bin "no smartd and smart-bench in $BIN (build first)"
# B inserts ~25 keys a ms beside A (5% of 0.5 Mops): room for every round
ROOM=${ROOM:-$(( ROUNDS * MAX_MS * 30 + 1000 ))}
# ~128 bytes a key (its KV block and its share of the table), 3x
BLADE=${BLADE:-$(( ((KEYS + ROOM) * 384 >> 20) + 64 ))M}

TMP=$(mktemp -d)
. bench/smartd-lib.sh
trap 'kill_all; rm -rf "$TMP"' EXIT
RANDOM=$SEED
table=crash-$$

smartd_start "$BLADE" --lease-ms "$LEASE" --dm-size "$DM" || exit 1
echo "ht-crash: $DS, seed $SEED, $ROUNDS rounds, lease $LEASE ms, blade $BLADE, device memory $DM," \
	"$KEYS keys, room for $ROOM new ones; A $AW, B $BW" \
	"$([ $FREEZE = 1 ] && echo "(frozen, then killed)" || echo "(killed)")"

mem_start=$(smartd_memory)

# A: creates and preloads the table, then runs until told to stop
bench_bg "$TMP/a.json" "$TMP/a.err" --table "$table" --keys "$KEYS" \
	--insert-room "$ROOM" --workload "$AW" --threads 1 --coros 8 \
	--seconds 86000 --json
apid=$BG
await_preload "$apid" "$TMP/a.err" "ht-crash: A"
mem_before=$(smartd_memory)

early=0
for ((r = 1; r <= ROUNDS; r++)); do
	bench_bg "$TMP/b.out" "$TMP/b.err" --table "$table" --no-preload \
		--keys "$KEYS" --workload "$BW" --threads 1 --coros 4 \
		--seconds 86000
	bpid=$BG
	ms=$(( MIN_MS + RANDOM % (MAX_MS - MIN_MS + 1) ))
	sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
	if kill -0 "$bpid" 2>/dev/null; then
		if [ $FREEZE = 1 ]; then
			kill -STOP "$bpid"
			sleep "$(printf '%d.%03d' $((LEASE * 3 / 2000)) \
				$((LEASE * 3 / 2 % 1000)))"
		fi
		kill -9 "$bpid"
		wait "$bpid" 2>/dev/null
	else
		wait "$bpid"
		echo "ht-crash: round $r: B exited by itself (status $?)" \
			"before its kill at $ms ms:" >&2
		cat "$TMP/b.err" >&2
		early=$((early + 1))
	fi
	if ! kill -0 "$apid" 2>/dev/null; then
		echo "ht-crash: round $r: A is gone:" >&2
		cat "$TMP/a.err" >&2
		exit 1
	fi
done

# C: the sweep, while A still runs
bench --table "$table" --no-preload --keys "$KEYS" --workload sweep \
	--threads 1 --coros 8 --json >"$TMP/c.json" 2>"$TMP/c.err"
crc=$?
kill -TERM "$apid"
wait "$apid"
arc=$?
mem_after=$(smartd_memory)

# D: alone now, sweeps once more and drops the table: what stays used is
# what the killed clients' workers held in their allocator caches (lost
# with them, bounded: docs/layout.md) and nothing of the table
bench --table "$table" --no-preload --keys "$KEYS" --workload sweep \
	--threads 1 --coros 8 --drop --json >"$TMP/d.json" 2>"$TMP/d.err"
drc=$?
mem_dropped=$(smartd_memory)

a_err=$(field "$TMP/a.json" errors) a_vf=$(field "$TMP/a.json" validation_failures)
a_max=$(field "$TMP/a.json" max_us)
bound=$(( LEASE * 1000 + LEASE * 1000 / 8 ))
under=$(awk -v m="${a_max:-1e99}" -v b="$bound" 'BEGIN { print (m < b) ? "yes" : "NO" }')
echo "rounds: $ROUNDS B processes killed at $MIN_MS..$MAX_MS ms" \
	"($early exited before their kill)"
echo "A: $(field "$TMP/a.json" ops) ops in $(field "$TMP/a.json" seconds) s," \
	"errors ${a_err:-?}$( [ "${a_err:-1}" != 0 ] && echo " (first $(field "$TMP/a.json" first_error))")," \
	"validation failures ${a_vf:-?}, p999 $(field "$TMP/a.json" p999_us) us," \
	"max ${a_max:-?} us; under lease_ms + lease_ms/8 = $bound us: $under"
if [ "$DS" = ht ]; then
	echo "A's table object: $(field "$TMP/a.json" ht_recovered) dead" \
		"clients' splits recovered, $(field "$TMP/a.json" ht_tent_cleared)" \
		"tentative slots cleared, $(field "$TMP/a.json" ht_subtables)" \
		"subtables"
else
	echo "A's tree object: $(field "$TMP/a.json" bt_lock_takeovers) locks" \
		"taken over from dead clients ($(field "$TMP/a.json" bt_repairs)" \
		"writes redone), height $(field "$TMP/a.json" bt_height)," \
		"lock tables in device memory: $(field "$TMP/a.json" bt_dm_lock_tables)"
fi
echo "C: sweep of $(field "$TMP/c.json" swept)/$KEYS keys, errors" \
	"$(field "$TMP/c.json" errors), validation failures" \
	"$(field "$TMP/c.json" validation_failures), max" \
	"$(field "$TMP/c.json" max_us) us: $([ $crc = 0 ] && echo ok || echo FAILED)"
echo "D: sweep of $(field "$TMP/d.json" swept)/$KEYS keys alone, errors" \
	"$(field "$TMP/d.json" errors), validation failures" \
	"$(field "$TMP/d.json" validation_failures), table dropped:" \
	"$(field "$TMP/d.json" dropped)"
echo "smartd memory before the table:  $mem_start"
echo "smartd memory before the rounds: $mem_before"
echo "smartd memory after C:           $mem_after"
echo "smartd memory after D's drop:    $mem_dropped"
if [ $arc != 0 ] || [ "${a_err:-1}" != 0 ] || [ "${a_vf:-1}" != 0 ]; then
	echo "ht-crash: A failed (status $arc):" >&2
	cat "$TMP/a.err" >&2
	exit 1
fi
if [ $crc != 0 ]; then
	echo "ht-crash: C failed (status $crc):" >&2
	cat "$TMP/c.err" >&2
	exit 1
fi
if [ $drc != 0 ] || [ "$(field "$TMP/d.json" errors)" != 0 ]; then
	echo "ht-crash: D failed (status $drc):" >&2
	cat "$TMP/d.err" >&2
	exit 1
fi
[ $early = 0 ] || exit 1
echo "ht-crash: passed"
