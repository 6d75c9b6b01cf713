#!/bin/sh
# Messaging under kill -9 (docs/rpc.md): one server (smart-bench rpc
# --serve), ROUNDS clients each flooding it with one-way messages and
# killed with SIGKILL at a seeded moment (100..900 ms), an echo client
# after every kill that must succeed, then the server's counters.  What it
# shows: the server is neither harmed nor wedged; a killed client's
# connection lives until the keepalive gives it up (5 s by default,
# docs/rpc.md §7): smart-stat counts the live connections right after the
# last kill and 6 s later, when every killed client's must be gone.
#   bench/rpc-kill.sh [BUILD_DIR] [ROUNDS] [SEED]
# RPC_KILL_SERVER_FLAGS: more flags for the server (--event: it sleeps
# when idle, so the keepalive's verdicts come from its timer).
# --help or -h prints this header and exits.
case ${1:-} in -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -eu
case ${1:-} in -*) echo "${0##*/}: $1: unknown flag (see --help)" >&2; exit 2 ;; esac
B=${1:-build}
R=${2:-10}
SEED=${3:-23}
BIN=$B/bin/smart-bench
[ -x "$BIN" ] || { echo "no $BIN: build first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'kill -9 $srv 2>/dev/null || true; rm -rf "$tmp"' EXIT
mkfifo "$tmp/addr"
# shellcheck disable=SC2086 # the server's flags, word-split on purpose
"$BIN" rpc --serve ${RPC_KILL_SERVER_FLAGS:-} > "$tmp/addr" 2> "$tmp/server.err" &
srv=$!
read -r addr < "$tmp/addr"
echo "server $addr (pid $srv)"
i=0
ok=0
x=$SEED
while [ $i -lt "$R" ]; do
	i=$((i + 1))
	x=$(( (x * 1103515245 + 12345) % 2147483648 ))
	ms=$(( 100 + x % 800 ))
	"$BIN" rpc --connect "$addr" --oneway --seconds 5 > /dev/null 2>&1 &
	c=$!
	sleep "$(awk -v m="$ms" 'BEGIN { printf "%.3f", m / 1000 }')"
	kill -9 $c
	wait $c 2>/dev/null || true
	if "$BIN" rpc --connect "$addr" --seconds 0.3 --json 2>/dev/null |
		grep -q '"mode":"echo"'; then
		ok=$((ok + 1))
	else
		echo "round $i: the echo after the kill failed" >&2
	fi
done
# the killed clients' connections, as smart-stat sees them: right after
# the last kill, then once the keepalive bound (5 s) has passed
STAT=$B/bin/smart-stat
live() {
	"$STAT" --pid $srv --json | tr '{' '\n' | grep -c '"state":"live"' || true
}
echo "live connections at the server after the last kill: $(live)"
sleep 6
echo "live connections at the server 6 s later: $(live)"
"$STAT" --pid $srv --json | tr ',' '\n' |
	grep -E '^"(ka_failures|ka_probes|conns_accepted|conns_failed)"' | head -4 | tr '\n' ' '
echo
kill -TERM $srv
wait $srv || true
echo "rounds $R (seed $SEED): echo after each kill ok in $ok"
grep "server:" "$tmp/server.err" || { echo "no counters from the server" >&2; exit 1; }
[ $ok -eq "$R" ]
