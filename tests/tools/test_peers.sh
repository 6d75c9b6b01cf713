#!/usr/bin/env bash
# The tools say what they found (issue 29): smart-ping at a messaging
# endpoint says it is one (and --rpc at a blade says it is a blade) where
# both used to fail alike with "connection refused or lost", in that one
# line (the connect's failure was printed above it too); smartd names
# a refused peer by its address, not by an fd number.
# Usage: test_peers.sh BIN_DIR
set -u
bin=${1:?usage: test_peers.sh BIN_DIR}
tmp=$(mktemp -d)
pids=
fail=0
cleanup() { for p in $pids; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
one() { # one NAME FILE: a failure in one line (the failed connect's
	# line beside what answered was two)
	if [ "$(wc -l <"$2")" -eq 1 ]; then echo "ok   $1"; else
		echo "FAIL $1: $(wc -l <"$2") lines:"; cat "$2"; fail=1; fi
}
has() { # has NAME FILE PATTERN
	if grep -qE -- "$3" "$2"; then echo "ok   $1"; else
		echo "FAIL $1: no '$3' in:"; cat "$2"; fail=1; fi
}

printf 'peers-test-secret-1234' >"$tmp/secret"; chmod 600 "$tmp/secret"
printf 'another-secret-5678xx' >"$tmp/other"; chmod 600 "$tmp/other"
"$bin/smartd" --size 16M --listen 127.0.0.1:0 --secret-file "$tmp/secret" \
	--log-level info >"$tmp/smartd.log" 2>&1 &
pids="$pids $!"
"$bin/smart-bench" rpc --serve --secret-file "$tmp/secret" >"$tmp/rpc.out" 2>"$tmp/rpc.err" &
pids="$pids $!"
for _ in $(seq 1200); do # a start under load may take long
	grep -q serving "$tmp/smartd.log" && [ -s "$tmp/rpc.out" ] && break
	sleep 0.05
done
blade=$(sed -n 's/.* on \([0-9.]*:[0-9]*\) .*/\1/p' "$tmp/smartd.log")
ep=$(head -1 "$tmp/rpc.out")
[ -n "$blade" ] && [ -n "$ep" ] || { echo "FAIL setup"; cat "$tmp"/*.log "$tmp"/rpc.*; exit 1; }

"$bin/smart-ping" --count 1 --secret-file "$tmp/secret" "$ep" >"$tmp/out" 2>&1
has ping-finds-endpoint "$tmp/out" "^smart-ping: $ep is a messaging endpoint .*, not a blade: probe it with --rpc$"
one ping-finds-endpoint-one-line "$tmp/out"
"$bin/smart-ping" --rpc --count 1 --secret-file "$tmp/secret" "$blade" >"$tmp/out" 2>&1
has ping-rpc-finds-blade "$tmp/out" "^smart-ping: $blade is a blade \(smartd\), not a messaging endpoint: probe it without --rpc$"
one ping-rpc-finds-blade-one-line "$tmp/out"
# nothing there: the failed connect's line, once
"$bin/smart-ping" --count 1 --secret-file "$tmp/secret" 127.0.0.1:1 >"$tmp/out" 2>&1
has ping-nothing-there "$tmp/out" "^smart-ping: connect 127\.0\.0\.1:1: connection refused"
one ping-nothing-there-one-line "$tmp/out"
"$bin/smart-ping" --rpc --count 1 --secret-file "$tmp/secret" 127.0.0.1:1 >"$tmp/out" 2>&1
has ping-rpc-nothing-there "$tmp/out" "^smart-ping: 127\.0\.0\.1:1: connection refused"
one ping-rpc-nothing-there-one-line "$tmp/out"
"$bin/smart-ping" --count 1 --secret-file "$tmp/other" "$blade" >"$tmp/out" 2>&1
n=$(grep -c "^smart-ping: " "$tmp/out")
[ "$n" -eq 1 ] && echo "ok   ping-wrong-secret-one-line" || {
	echo "FAIL ping-wrong-secret-one-line: $n lines"; cat "$tmp/out"; fail=1; }
for _ in $(seq 100); do grep -q "session .*refused" "$tmp/smartd.log" && break; sleep 0.05; done
has smartd-names-peer "$tmp/smartd.log" "session 127\.0\.0\.1:[0-9]+: .*refused"
[ $fail -eq 0 ] && echo "peers: all passed" || echo "peers: FAILED"
exit $fail
