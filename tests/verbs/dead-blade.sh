#!/usr/bin/env bash
# A blade dies under a client: its ops must fail with an error within a
# bounded time (ib_timeout x ib_retry), never hang, and the client must go
# on failing fast (its attempt to reconnect is refused) and exit.  Run in
# the Soft-RoCE VM (verbs); on shm a dead blade process leaves the mapped
# region usable, which test_one_sided covers.  Usage: dead-blade.sh BIN_DIR
set -u
bin=${1:?usage: dead-blade.sh BIN_DIR}
tp=${SMART_TRANSPORT:-shm}
[ "$tp" = verbs ] || { echo "SKIP: needs SMART_TRANSPORT=verbs (a shm region outlives its blade)"; exit 77; }
tmp=$(mktemp -d)
trap 'kill -9 $sd 2>/dev/null; rm -rf "$tmp"' EXIT
printf 'dead-blade-secret' >"$tmp/s"; chmod 600 "$tmp/s"
"$bin/smartd" --transport verbs --size 16M --listen 127.0.0.1:0 --secret-file "$tmp/s" >"$tmp/log" 2>&1 &
sd=$!
for _ in $(seq 100); do grep -q serving "$tmp/log" && break; sleep 0.1; done
addr=$(sed -n 's/.* on \([0-9.]*:[0-9]*\) .*/\1/p' "$tmp/log")
[ -n "$addr" ] || { cat "$tmp/log"; exit 1; }
# 4.2 ms ACK timeout x 3 retries: a dead peer is declared in well under 1 s
SMART_IB_TIMEOUT=10 SMART_IB_RETRY=3 timeout 120 "$bin/smart-ping" --transport verbs \
	--secret-file "$tmp/s" --count 60 --interval 0.05 --verify --op write "$addr" >"$tmp/ping" 2>&1 &
ping=$!
sleep 1.5
kill -9 $sd; wait $sd 2>/dev/null
t0=$(date +%s%N)
wait $ping; rc=$?
t1=$(date +%s%N)
cat "$tmp/ping" | grep -v "^seq=" ; grep -c "ERROR" "$tmp/ping" | sed 's/^/probes failed after the kill: /'
echo "smart-ping exited $rc, $(( (t1 - t0) / 1000000 )) ms after the blade was killed"
[ $rc -eq 1 ] || { echo "FAIL: expected exit 1 (failed probes), got $rc"; exit 1; }
grep -q "ERROR" "$tmp/ping" || { echo "FAIL: no probe failed"; exit 1; }
grep -q "seq=0 .*rtt" "$tmp/ping" || { echo "FAIL: no probe before the kill"; exit 1; }
echo "dead blade: errors surfaced, no hang"
