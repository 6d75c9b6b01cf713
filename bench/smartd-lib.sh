# What the bench scripts that run smart-bench processes against one
# smartd share (sourced by bench/ht-crash.sh and bench/ht-shared.sh): a
# loopback smartd with a fresh secret file (mode 0600) in a scratch
# folder, its memory line (SIGUSR1), waiting for a line in a log, the
# fields of smart-bench's --json, and the cleanup of every process the
# script started (by pid, never by name).
#
# Use: set BIN (the folder of smartd and smart-bench) and TMP (a scratch
# folder the caller removes), then call smartd_start.  Every pid to be
# killed on exit goes into PIDS.

PIDS=()

# kill_all: SIGKILL every process the script started and still runs.
kill_all() {
	local p
	for p in "${PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	PIDS=()
}

# wait_for FILE PATTERN SECS [PID]: 0 once a line of FILE matches PATTERN
# (an extended regex), 1 after SECS seconds or once process PID is gone.
wait_for() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		grep -qE -- "$2" "$1" 2>/dev/null && return 0
		[ -z "${4:-}" ] || kill -0 "$4" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# await_preload PID ERR WHO: wait until process PID, a table's creator
# with its stderr in ERR, has preloaded the table; else say why (WHO: the
# process's name in the message) and exit: 2 when it refused a bad flag
# (smart-bench names it), 1 otherwise.
await_preload() {
	local st
	wait_for "$2" "^table .*: preloaded" 120 "$1" && return 0
	kill -9 "$1" 2>/dev/null
	wait "$1"
	st=$?
	echo "$3 did not preload the table (status $st):" >&2
	cat "$2" >&2
	[ $st = 2 ] && exit 2
	exit 1
}

# smartd_start SIZE ARGS...: a blade of SIZE on 127.0.0.1 (any port) with
# the run's secret (a fresh 32-byte one, made at the first call); the
# first call sets SMARTD_PID, SMARTD_LOG and ADDR, and every call appends
# its pid, log and address to SMARTD_PIDS, SMARTD_LOGS and ADDRS and its
# "--connect ADDR" to CONNECT (what bench and bench_bg pass: a structure
# over every blade started).  ARGS name a blade's --id from the second on.
SMARTD_PIDS=() SMARTD_LOGS=() ADDRS=() CONNECT=()
smartd_start() {
	local n=${#SMARTD_PIDS[@]} log pid addr
	SECRET=$TMP/secret
	[ -s "$SECRET" ] || (umask 077 && head -c 16 /dev/urandom |
		od -An -tx1 | tr -d ' \n' >"$SECRET")
	log=$TMP/smartd$n.log
	[ "$n" = 0 ] && log=$TMP/smartd.log
	"$BIN/smartd" --size "$1" --listen 127.0.0.1:0 --secret-file "$SECRET" \
		"${@:2}" >"$log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	if ! wait_for "$log" "serving" 10 "$pid"; then
		echo "smartd did not start:" >&2
		cat "$log" >&2
		return 1
	fi
	addr=$(sed -n 's/.* on \([0-9.]*:[0-9]*\) .*/\1/p' "$log")
	SMARTD_PIDS+=("$pid") SMARTD_LOGS+=("$log") ADDRS+=("$addr")
	CONNECT+=(--connect "$addr")
	if [ "$n" = 0 ]; then
		SMARTD_PID=$pid SMARTD_LOG=$log ADDR=$addr
	fi
}

# smartd_memory [LOG PID]: smartd's memory line now (it prints one on
# SIGUSR1); the smartd of smartd_start, or the one with that log and pid.
smartd_memory() {
	local log=${1:-$SMARTD_LOG} pid=${2:-$SMARTD_PID} n i
	n=$(grep -c "^smartd: memory:" "$log")
	kill -USR1 "$pid"
	for ((i = 0; i < 100; i++)); do
		[ "$(grep -c "^smartd: memory:" "$log")" -gt "$n" ] && break
		sleep 0.02
	done
	grep "^smartd: memory:" "$log" | tail -1 | sed 's/^smartd: memory: //'
}

# field FILE KEY: the value of KEY in the one-line JSON object in FILE
# (strings without their quotes; empty when absent).
field() {
	grep -o "\"$2\":[^,}]*" "$1" 2>/dev/null | head -1 | cut -d: -f2- | tr -d '"'
}

# bench ARGS...: smart-bench ycsb against the blades (the table's clients).
bench() {
	"$BIN/smart-bench" ycsb "${CONNECT[@]}" --secret-file "$SECRET" \
		${DS:+--ds "$DS"} "$@"
}

# bench_bg OUT ERR ARGS...: the same in the background, stdout to OUT and
# stderr to ERR; BG is its pid (smart-bench's own: a signal sent to it
# reaches smart-bench, not a subshell).
bench_bg() {
	local out=$1 err=$2
	shift 2
	"$BIN/smart-bench" ycsb "${CONNECT[@]}" --secret-file "$SECRET" \
		${DS:+--ds "$DS"} "$@" >"$out" 2>"$err" &
	BG=$!
	PIDS+=("$BG")
}
