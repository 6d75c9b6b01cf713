#!/usr/bin/env bash
# Smoke tests of smart-bench rpc (messaging, docs/rpc.md): --help, short
# echo and one-way runs of 2 client processes x 2 threads x 4 tasks
# against the server it spawns (the documented JSON fields, a nonzero
# count, no error, no receiver-not-ready), an event-mode server that
# sleeps between paced calls (--gap), the table, a server of its own
# (--serve with a secret file) that two runs --connect to and a wrong
# secret is refused by, its counters at SIGTERM, and the refusals of bad
# input (exit 2).  Asserts no timing, only shapes and counts.  About 5 s.
# Usage: test_rpc_bench.sh BIN_DIR
set -u
bin=${1:?usage: test_rpc_bench.sh BIN_DIR}
b=$bin/smart-bench
. "$(dirname "$0")/check-lib.sh"
# clean NAME: the last JSON run counted messages, with no error
clean() {
	within "$1-msgs" msgs 1 1e18
	has "$1-clean" '"errors":0,"first_error":"",.*"rnr":0,"stop_signal":0,'
}

json=(mode size clients threads outstanding gap_us transport server
      server_mode msgs seconds
      mrps gbps p50_us p99_us p999_us max_us errors first_error
      window_stalls call_timeouts rnr stop_signal rndv_sent)
many=(--seconds 0.3 --clients 2 --threads 2 --outstanding 4 --json)

check help "$b" rpc --help
has help-text "--outstanding K"
has help-common "--threads T"
check help-top "$b" --help
has help-top-rpc "^  rpc +messaging"
if grep -q "not built" "$tmp/out"; then
	echo "FAIL help-top-built: 'not built' in --help"; fail=1; else
	echo "ok   help-top-built"; fi

check echo "$b" rpc "${many[@]}"
fields echo-fields "${json[@]}"
has echo-shape '^\{"mode":"echo","size":32,"clients":2,"threads":2,"outstanding":4,"gap_us":0,"transport":"shm","server":"spawned","server_mode":"poll","msgs":[0-9]+,'
clean echo
grep -qE "rpc server: [0-9]+ live connections; accepted 4, failed 0," "$tmp/err" &&
	echo "ok   echo-server-counters" ||
	{ echo "FAIL echo-server-counters"; cat "$tmp/err"; fail=1; }

check oneway "$b" rpc "${many[@]}" --oneway --size 100
fields oneway-fields "${json[@]}"
has oneway-shape '^\{"mode":"oneway","size":100,"clients":2,"threads":2,"outstanding":4,'
clean oneway

# the server in event mode, idle between calls (--gap): it sleeps, and
# every call is answered
check event "$b" rpc --seconds 0.3 --gap 500 --event --json
has event-shape '"gap_us":500,"transport":"shm","server":"spawned","server_mode":"event",'
clean event
grep -qE "rpc server: .*; event mode, [1-9][0-9]* sleeps" "$tmp/err" &&
	echo "ok   event-server-sleeps" ||
	{ echo "FAIL event-server-sleeps"; cat "$tmp/err"; fail=1; }

# past eager_max (4096) messages go by rendezvous
check table "$b" rpc --seconds 0.2 --threads 2 --size 64K
has table-clients "Clients +: 1 process x 2 threads x 1 call in flight"
has table-message "Message +: 65536 B payload, by rendezvous, over 4096 B; window 64"
has table-rndv "sent by rendezvous [1-9]"
has table-header "#bytes +#msgs +Mrps +Gb/s +p50\[us\] +p99\[us\] +p999\[us\] +max\[us\] +errors"
has table-row "^ 65536 +[1-9][0-9]* +[0-9.]+ +[0-9.]+ .* 0$"

# a server of its own, for runs from elsewhere: its address on stdout
printf 'rpc-bench-test-secret-42' >"$tmp/secret"
printf 'not-the-server-secret-42' >"$tmp/wrong"
chmod 600 "$tmp/secret" "$tmp/wrong"
"$b" rpc --serve --secret-file "$tmp/secret" >"$tmp/srv.out" \
	2>"$tmp/srv.err" &
srv=$!
pids+=($srv)
for _ in $(seq 100); do [ -s "$tmp/srv.out" ] && break; sleep 0.05; done
addr=$(head -1 "$tmp/srv.out")
on=(--connect "$addr" --secret-file "$tmp/secret")
check connect-echo "$b" rpc "${on[@]}" "${many[@]}"
has connect-json '"server":"connected"'
clean connect-echo
check connect-oneway "$b" rpc "${on[@]}" "${many[@]}" --oneway
clean connect-oneway
fails connect-wrong-secret "connect $addr: " "$b" rpc --connect "$addr" \
	--secret-file "$tmp/wrong" --seconds 0.1
kill -TERM $srv
wait $srv
rc=$?
if [ $rc -eq 0 ] && grep -qE "rpc server: [0-9]+ live connections; accepted 8, failed 0, refused handshakes 1;" "$tmp/srv.err"; then
	echo "ok   serve-counters"; else
	echo "FAIL serve-counters: status $rc"; cat "$tmp/srv.err"; fail=1; fi

refuse serve-connect "^smart-bench: --serve: --serve and --connect exclude each other" \
	"$b" rpc --serve --connect 127.0.0.1:1
refuse serve-oneway "^smart-bench: --serve: a server takes no --oneway" \
	"$b" rpc --serve --oneway
refuse serve-size "^smart-bench: --serve: a server takes no .*--size" \
	"$b" rpc --serve --size 64
refuse listen-alone "^smart-bench: --listen: is for --serve" \
	"$b" rpc --listen 127.0.0.1:0
refuse serve-timeout "^smart-bench: --serve: a server takes no .*--timeout" \
	"$b" rpc --serve --timeout 100
refuse gap-oneway "^smart-bench: --gap: is for echo calls" \
	"$b" rpc --gap 10 --oneway
refuse event-connect "^smart-bench: --event: is the server's" \
	"$b" rpc --event --connect 127.0.0.1:1
refuse blade-size "^smart-bench: --blade-size: rpc has no blade" \
	"$b" rpc --blade-size 16M
refuse max-tasks "^smart-bench: --outstanding: 100 tasks, but the library option max_tasks is 50" \
	"$b" rpc --outstanding 100 --opt max_tasks=50
refuse too-many "^smart-bench: --threads: 256 clients x 100 threads: more than 4096 connections" \
	"$b" rpc --clients 256 --threads 100
# every bad value names its flag and the value, and exits 2
bad() { # bad FLAG VALUE: smart-bench rpc --FLAG VALUE
	refuse "bad-$1-$2" "^smart-bench: --$1: .*\('$2'\)$" "$b" rpc --$1 "$2"
}
bad size 65M
bad size -1
bad clients 0
bad clients 300
bad outstanding 0
bad outstanding 2000
bad seconds 0
bad gap -1
bad timeout 0
bad gap 2000000
bad transport ib
refuse flag-value "^smart-bench: --oneway: takes no value" "$b" rpc --oneway=1
[ $fail -eq 0 ] && echo "rpc bench: all passed" || echo "rpc bench: FAILED"
exit $fail
