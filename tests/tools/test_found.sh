#!/usr/bin/env bash
# The tools say what they found and what they want (issue 29):
#  - smart-stat names an accepted connection by who dialed (on shm the
#    dialer's pid and uid, from the unix socket; on TCP its address), where
#    it printed "peer 1", "peer 2", ...;
#  - smart-ping --rpc routes the library's messages through its log handler
#    (smart_log_set_handler): no "smart: warn" line of the library's own on
#    stderr beside the tool's one line, as a blade probe already did;
#  - a bad --techniques (or SMART_TECHNIQUES) refusal lists the valid names.
# Usage: test_found.sh BIN_DIR
set -u
bin=${1:?usage: test_found.sh BIN_DIR}
tmp=$(mktemp -d)
pids=
fail=0
cleanup() { for p in $pids; do { kill -9 "$p"; wait "$p"; } 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
has() { # has NAME FILE PATTERN
	if grep -qE -- "$3" "$2"; then echo "ok   $1"; else
		echo "FAIL $1: no '$3' in:"; cat "$2"; fail=1; fi
}
hasnt() { # hasnt NAME FILE PATTERN
	if ! grep -qE -- "$3" "$2"; then echo "ok   $1"; else
		echo "FAIL $1: '$3' in:"; cat "$2"; fail=1; fi
}

# 1. smart-stat's PEER of an accepted connection: the dialer's pid and uid
printf 'found-test-secret-12345' >"$tmp/secret"; chmod 600 "$tmp/secret"
printf 'another-secret-5678xx' >"$tmp/other"; chmod 600 "$tmp/other"
"$bin/smart-bench" rpc --serve --secret-file "$tmp/secret" >"$tmp/rpc.out" 2>"$tmp/rpc.err" &
srv=$!
pids="$pids $srv"
for _ in $(seq 1200); do [ -s "$tmp/rpc.out" ] && break; sleep 0.05; done
ep=$(head -1 "$tmp/rpc.out")
[ -n "$ep" ] || { echo "FAIL setup"; cat "$tmp"/rpc.*; exit 1; }
# a connection held open: pings until killed
"$bin/smart-ping" --rpc --quiet --count 100000 --interval 0.05 \
	--secret-file "$tmp/secret" "$ep" >/dev/null 2>"$tmp/ping.err" &
pinger=$!
pids="$pids $pinger"
# wait (with a deadline) for the server to show the accepted connection
for _ in $(seq 600); do
	"$bin/smart-stat" --pid "$srv" >"$tmp/stat" 2>&1
	grep -q accepted "$tmp/stat" && break
	sleep 0.1
done
has stat-sees-connection "$tmp/stat" "accepted"
has stat-names-peer-pid "$tmp/stat" "accepted +pid $pinger uid $(id -u)"
hasnt stat-no-peer-n "$tmp/stat" "accepted +peer [0-9]"
{ kill -9 $pinger; wait $pinger; } 2>/dev/null

# 2. smart-ping --rpc with the wrong secret: one line, the tool's
"$bin/smart-ping" --rpc --count 1 --secret-file "$tmp/other" "$ep" >"$tmp/out" 2>&1
hasnt ping-rpc-no-library-line "$tmp/out" "^smart: "
n=$(grep -c "" "$tmp/out")
[ "$n" -eq 1 ] && echo "ok   ping-rpc-one-line" || {
	echo "FAIL ping-rpc-one-line: $n lines"; cat "$tmp/out"; fail=1; }

# 3. the techniques refusal lists the names (flag and environment), exit 2
names="ThrdAwareAlloc,WorkReqThrot,ConflictAvoid,SpecLookup"
"$bin/smart-perf" --techniques ThrdAwareAloc --seconds 0.1 >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 2 ] && echo "ok   techniques-exit-2" || { echo "FAIL techniques-exit-2: $rc"; fail=1; }
has techniques-flag-lists-names "$tmp/out" "one or more of $names .*or None"
SMART_TECHNIQUES=bogus "$bin/smart-bench" ycsb --seconds 0.1 >"$tmp/out" 2>&1
has techniques-env-lists-names "$tmp/out" "SMART_TECHNIQUES: .*one or more of $names"
# smart-stat with no endpoint to show: a line saying so under the header
# (it printed the bare header).  As an unprivileged user, whose processes
# have none whatever else runs (root's may, in a parallel ctest).
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
	nobody test -x "$bin/smart-stat"; then
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$bin/smart-stat" >"$tmp/none.out" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then echo "ok   stat-none-exit-0"; else
		echo "FAIL stat-none-exit-0: exit $rc"; fail=1; fi
	has stat-none-said "$tmp/none.out" '^\(none: no process of this user has an @smart-stat:'
else
	echo "skip stat-none-said (needs root, setpriv, and a build nobody can run)"
fi
[ $fail -eq 0 ] && echo "found: all passed" || echo "found: FAILED"
exit $fail
