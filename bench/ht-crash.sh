#!/usr/bin/env bash
# ht-crash.sh: clients killed at random moments must cost a shared Smart-HT
# table (or, with --ds bt, a Smart-BT tree) nothing (docs/design.md §10.3).
#
# One or more smartds on 127.0.0.1 (one fresh secret file, mode 0600, a
# short lease) hold one or two named structures spread over all of them
# (bt: two blades and two trees by default, so that merges and splits
# cross blades and a freed node's block can go to the other tree).  For
# each structure a process A creates and preloads it, then updates it for
# the whole experiment.  ROUNDS times, process B joins one of them
# (--no-preload; the structures in turn) with a workload that inserts (ht:
# tentative slots and sometimes a split) or inserts and deletes its own
# keys (bt's churn: splits and merges), and is killed with SIGKILL after a
# random 50..500 ms (bash's RANDOM, seeded; the seed is printed).  Then a
# recoverer K joins the same structure with the same workload - it meets
# what B left half done and takes it over - and is killed too, after a
# random 0..MIN ms of its own work, so that recoveries die as well.  Then
# C sweeps each structure: every preloaded key read whole and updated
# (bt: then the whole tree scanned, keys strictly ascending, every value
# whole, every preloaded key met once); after the As stop, D sweeps again
# and drops it.  A, C and D must see no
# error and no validation failure; A's slowest op is compared with the
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
  --blades N        smartds, the structures spread over all of them, 1..4
                    [ht 1, bt 2]
  --trees N         structures sharing the blades, 1..2 [ht 1, bt 2]
  --recoverers 0|1  after each B, a K killed inside its recovery [1]
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
  --b-workload W    B's (and K's) workload [ht d, bt churn]
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
FREEZE=0 DS=ht KEYS=20000 ROOM= BLADE= DM=auto AW=update-only BW= BIN=build/bin
BLADES= TREES= RECOVERERS=1
num() { # num FLAG VALUE: VALUE must be a non-negative integer
	[[ $2 =~ ^[0-9]+$ ]] || bad "$1" "want a non-negative integer ('$2')"
}
while [ $# -gt 0 ]; do
	case $1 in
	--help|-h) usage; exit 0 ;;
	--freeze) FREEZE=1; shift; continue ;;
	--ds|--rounds|--seed|--lease-ms|--min-ms|--max-ms|--keys|\
	--insert-room|--blade-size|--dm-size|--a-workload|--b-workload|--bin|\
	--blades|--trees|--recoverers)
		[ $# -ge 2 ] || bad "$1" "needs a value" ;;
	*) bad "$1" "unknown flag (see --help)" ;;
	esac
	case $1 in
	--ds) [[ $2 =~ ^(ht|bt)$ ]] || bad "$1" "want ht or bt ('$2')"
		DS=$2 ;;
	--rounds) num "$1" "$2"; ROUNDS=$2 ;;
	--blades) [[ $2 =~ ^[1-4]$ ]] || bad "$1" "want 1..4 ('$2')"
		BLADES=$2 ;;
	--trees) [[ $2 =~ ^[12]$ ]] || bad "$1" "want 1 or 2 ('$2')"
		TREES=$2 ;;
	--recoverers) [[ $2 =~ ^[01]$ ]] || bad "$1" "want 0 or 1 ('$2')"
		RECOVERERS=$2 ;;
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
if [ "$DS" = bt ]; then
	BLADES=${BLADES:-2} TREES=${TREES:-2} BW=${BW:-churn}
else
	BLADES=${BLADES:-1} TREES=${TREES:-1} BW=${BW:-d}
fi
# B inserts ~25 keys a ms beside A (5% of 0.5 Mops): room for every round
ROOM=${ROOM:-$(( ROUNDS * MAX_MS * 30 + 1000 ))}
# ~128 bytes a key (its KV block and its share of the table), 3x
BLADE=${BLADE:-$(( ((KEYS + ROOM) * 384 >> 20) + 64 ))M}

TMP=$(mktemp -d)
. bench/smartd-lib.sh
trap 'kill_all; rm -rf "$TMP"' EXIT
RANDOM=$SEED

for ((i = 0; i < BLADES; i++)); do
	smartd_start "$BLADE" --lease-ms "$LEASE" --dm-size "$DM" --id "$i" ||
		exit 1
done
echo "ht-crash: $DS, seed $SEED, $ROUNDS rounds, lease $LEASE ms, $BLADES" \
	"blade(s) of $BLADE, device memory $DM, $TREES structure(s) of $KEYS" \
	"keys, room for $ROOM new ones; A $AW, B $BW" \
	"$([ $FREEZE = 1 ] && echo "(frozen, then killed)" || echo "(killed)")" \
	"$([ $RECOVERERS = 1 ] && echo "then a recoverer K killed")"

mem() { # mem: every smartd's memory line, " | " between them
	local i out=
	for ((i = 0; i < BLADES; i++)); do
		out+="${out:+ | }$(smartd_memory "${SMARTD_LOGS[$i]}" \
			"${SMARTD_PIDS[$i]}")"
	done
	echo "$out"
}
sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }
mem_start=$(mem)

# A of each structure: creates and preloads it, then runs until told to
# stop (the structures are named crash-PID-1, -2)
apids=()
for ((t = 1; t <= TREES; t++)); do
	bench_bg "$TMP/a$t.json" "$TMP/a$t.err" --table "crash-$$-$t" \
		--keys "$KEYS" --insert-room "$ROOM" --workload "$AW" \
		--threads 1 --coros 8 --seconds 86000 --json
	apids+=("$BG")
	await_preload "$BG" "$TMP/a$t.err" "ht-crash: A$t"
done
mem_before=$(mem)

# kill_in PID MS: SIGKILL PID after MS ms (frozen first with --freeze);
# 1 when it had exited by itself before (its output then explains)
kill_in() {
	sleep_ms "$2"
	kill -0 "$1" 2>/dev/null || { wait "$1"; return 1; }
	if [ $FREEZE = 1 ]; then
		kill -STOP "$1"
		sleep_ms $((LEASE * 3 / 2))
	fi
	kill -9 "$1"
	wait "$1" 2>/dev/null
	return 0
}

early=0 kstarted=0
for ((r = 1; r <= ROUNDS; r++)); do
	t=$(( (r - 1) % TREES + 1 ))
	bench_bg "$TMP/b.out" "$TMP/b.err" --table "crash-$$-$t" --no-preload \
		--keys "$KEYS" --workload "$BW" --threads 1 --coros 4 \
		--seconds 86000
	if ! kill_in "$BG" $(( MIN_MS + RANDOM % (MAX_MS - MIN_MS + 1) )); then
		echo "ht-crash: round $r: B exited by itself before its kill:" >&2
		cat "$TMP/b.err" >&2
		early=$((early + 1))
	fi
	if [ $RECOVERERS = 1 ]; then
		# K: its start (connect, open) takes about MIN ms; then it
		# works for 0..MIN ms among what B left
		bench_bg "$TMP/k.out" "$TMP/k.err" --table "crash-$$-$t" \
			--no-preload --keys "$KEYS" --workload "$BW" \
			--threads 1 --coros 4 --seconds 86000
		if ! kill_in "$BG" $(( MIN_MS + RANDOM % (MIN_MS + 1) )); then
			echo "ht-crash: round $r: K exited by itself before its" \
				"kill:" >&2
			cat "$TMP/k.err" >&2
			early=$((early + 1))
		fi
		kstarted=$((kstarted + 1))
	fi
	for ((i = 0; i < TREES; i++)); do
		kill -0 "${apids[$i]}" 2>/dev/null && continue
		echo "ht-crash: round $r: A$((i + 1)) is gone:" >&2
		cat "$TMP/a$((i + 1)).err" >&2
		exit 1
	done
done

# C: the sweeps, while the As still run
crcs=()
for ((t = 1; t <= TREES; t++)); do
	bench --table "crash-$$-$t" --no-preload --keys "$KEYS" \
		--workload sweep --threads 1 --coros 8 --json \
		>"$TMP/c$t.json" 2>"$TMP/c$t.err"
	crcs+=($?)
done
arcs=()
for ((i = 0; i < TREES; i++)); do
	kill -TERM "${apids[$i]}"
	wait "${apids[$i]}"
	arcs+=($?)
done
mem_after=$(mem)

# D: alone now, sweeps once more and drops each structure: what stays used
# is what the killed clients' workers held in their allocator caches
# (lost with them, bounded: docs/layout.md) and nothing of the structures
drcs=()
for ((t = 1; t <= TREES; t++)); do
	bench --table "crash-$$-$t" --no-preload --keys "$KEYS" \
		--workload sweep --threads 1 --coros 8 --drop --json \
		>"$TMP/d$t.json" 2>"$TMP/d$t.err"
	drcs+=($?)
done
mem_dropped=$(mem)

bound=$(( LEASE * 1000 + LEASE * 1000 / 8 ))
echo "rounds: $ROUNDS B processes killed at $MIN_MS..$MAX_MS ms," \
	"$kstarted recoverers killed after them ($early exited before" \
	"their kill)"
ok=1
for ((t = 1; t <= TREES; t++)); do
	sfx=$t
	[ $TREES = 1 ] && sfx=
	a=$TMP/a$t.json c=$TMP/c$t.json d=$TMP/d$t.json
	a_err=$(field "$a" errors) a_vf=$(field "$a" validation_failures)
	a_max=$(field "$a" max_us)
	under=$(awk -v m="${a_max:-1e99}" -v b="$bound" \
		'BEGIN { print (m < b) ? "yes" : "NO" }')
	echo "A$sfx: $(field "$a" ops) ops in $(field "$a" seconds) s," \
		"errors ${a_err:-?}$( [ "${a_err:-1}" != 0 ] && echo " (first $(field "$a" first_error))")," \
		"validation failures ${a_vf:-?}, p999 $(field "$a" p999_us) us," \
		"max ${a_max:-?} us; under lease_ms + lease_ms/8 = $bound us: $under"
	if [ "$DS" = ht ]; then
		echo "A$sfx's table object: $(field "$a" ht_recovered) dead" \
			"clients' splits recovered, $(field "$a" ht_tent_cleared)" \
			"tentative slots cleared, $(field "$a" ht_subtables)" \
			"subtables"
	else
		echo "A$sfx's tree object: $(field "$a" bt_lock_takeovers) locks" \
			"taken over from dead clients ($(field "$a" bt_repairs)" \
			"writes redone), height $(field "$a" bt_height)," \
			"lock tables in device memory: $(field "$a" bt_dm_lock_tables)"
	fi
	echo "C$sfx: sweep of $(field "$c" swept)/$KEYS keys, errors" \
		"$(field "$c" errors), validation failures" \
		"$(field "$c" validation_failures), max" \
		"$(field "$c" max_us) us: $([ "${crcs[$((t - 1))]}" = 0 ] && echo ok || echo FAILED)"
	echo "D$sfx: sweep of $(field "$d" swept)/$KEYS keys alone, errors" \
		"$(field "$d" errors), validation failures" \
		"$(field "$d" validation_failures), table dropped:" \
		"$(field "$d" dropped)"
	[ "$DS" = bt ] && echo "C$sfx and D$sfx scanned the whole tree in" \
		"order: $(field "$c" scanned_entries) and" \
		"$(field "$d" scanned_entries) entries, every value whole"
	if [ "${arcs[$((t - 1))]}" != 0 ] || [ "${a_err:-1}" != 0 ] ||
	   [ "${a_vf:-1}" != 0 ]; then
		echo "ht-crash: A$sfx failed (status ${arcs[$((t - 1))]}):" >&2
		cat "$TMP/a$t.err" >&2
		ok=0
	fi
	if [ "${crcs[$((t - 1))]}" != 0 ]; then
		echo "ht-crash: C$sfx failed (status ${crcs[$((t - 1))]}):" >&2
		cat "$TMP/c$t.err" >&2
		ok=0
	fi
	if [ "${drcs[$((t - 1))]}" != 0 ] || [ "$(field "$d" errors)" != 0 ]; then
		echo "ht-crash: D$sfx failed (status ${drcs[$((t - 1))]}):" >&2
		cat "$TMP/d$t.err" >&2
		ok=0
	fi
done
echo "smartd memory before the table:  $mem_start"
echo "smartd memory before the rounds: $mem_before"
echo "smartd memory after C:           $mem_after"
echo "smartd memory after D's drop:    $mem_dropped"
# a blade whose own records (superblock, lease table) no longer check was
# written where no client may write: the worst a structure can do
if grep -q "protocol error" <<<"$mem_start$mem_before$mem_after$mem_dropped"; then
	echo "ht-crash: a blade's superblock was overwritten (its memory" \
		"line says protocol error)" >&2
	ok=0
fi
[ $ok = 1 ] && [ $early = 0 ] || exit 1
echo "ht-crash: passed"
