# check-lib.sh: what the smart-bench shell tests share (sourced): a
# scratch directory removed at exit with the background processes in
# `pids` (killed and reaped), and checks that print "ok   NAME" or
# "FAIL NAME: why" and set `fail`.  The last command's stdout is in
# $tmp/out, its stderr in $tmp/err.
tmp=$(mktemp -d)
pids=()
fail=0
cleanup() {
	local p
	for p in "${pids[@]}"; do
		{ kill -9 "$p"; wait "$p"; } 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

check() { # check NAME COMMAND...: must succeed
	if "${@:2}" >"$tmp/out" 2>"$tmp/err"; then echo "ok   $1"; else
		echo "FAIL $1 (status $?)"; cat "$tmp/out" "$tmp/err"; fail=1; fi
}
refuse() { # refuse NAME PATTERN COMMAND...: exit 2, PATTERN on stderr
	"${@:3}" >"$tmp/out" 2>"$tmp/err"; local rc=$?
	if [ $rc -eq 2 ] && grep -qE -- "$2" "$tmp/err"; then
		echo "ok   $1 (refused)"; else
		echo "FAIL $1: status $rc, wanted 2 and '$2'"
		cat "$tmp/out" "$tmp/err"; fail=1; fi
}
has() { # has NAME PATTERN: the last stdout matches
	if grep -qE -- "$2" "$tmp/out"; then echo "ok   $1"; else
		echo "FAIL $1: no '$2' in:"; cat "$tmp/out"; fail=1; fi
}
# fields NAME KEY...: the last JSON has every key
fields() {
	local k missing=""
	for k in "${@:2}"; do
		grep -q "\"$k\":" "$tmp/out" || missing="$missing $k"
	done
	if [ -z "$missing" ]; then echo "ok   $1"; else
		echo "FAIL $1: missing$missing"; cat "$tmp/out"; fail=1; fi
}
# within NAME KEY LO HI: the last JSON's number KEY is in [LO, HI]
within() {
	local v
	v=$(grep -o "\"$2\":[^,}]*" "$tmp/out" | head -1 | cut -d: -f2)
	if awk -v v="$v" -v lo="$3" -v hi="$4" \
		'BEGIN { exit !(v != "" && v != "null" && v + 0 >= lo && v + 0 <= hi) }'; then
		echo "ok   $1 ($2 $v)"; else
		echo "FAIL $1: $2 is '$v', wanted [$3, $4]"; fail=1; fi
}
# fails NAME PATTERN COMMAND...: exit 1 (a failed run, not bad input),
# PATTERN on stderr
fails() {
	"${@:3}" >"$tmp/out" 2>"$tmp/err"; local rc=$?
	if [ $rc -eq 1 ] && grep -qE -- "$2" "$tmp/err"; then
		echo "ok   $1 (failed, 1)"; else
		echo "FAIL $1: status $rc, wanted 1 and '$2'"
		cat "$tmp/out" "$tmp/err"; fail=1; fi
}
# smartds SIZE SECRET ID...: a smartd of SIZE per ID on 127.0.0.1 with the
# secret SECRET (a file made here), killed at exit; their addresses in
# `addrs` (an empty one: that smartd did not start)
smartds() {
	local size=$1 i
	printf '%s' "$2" >"$tmp/secret"
	chmod 600 "$tmp/secret"
	addrs=()
	for i in "${@:3}"; do
		"$bin/smartd" --size "$size" --listen 127.0.0.1:0 --id "$i" \
			--secret-file "$tmp/secret" >"$tmp/smartd$i.log" 2>&1 &
		pids+=($!)
		for _ in $(seq 100); do grep -q "serving" "$tmp/smartd$i.log" && break; sleep 0.1; done
		addrs+=("$(sed -n 's/.* on \([0-9.]*:[0-9]*\) .*/\1/p' "$tmp/smartd$i.log")")
	done
}
# fixed_port N: a random first port of N in a row for listeners whose
# ports must be known before they start, below the kernel's ephemeral
# range (ip_local_port_range), which no outgoing connection is given: a
# port drawn inside it collided with another test's connection
# (test_stream_cross: "cannot listen at 127.0.0.1:51192: already exists")
fixed_port() {
	local lo _
	read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
	[ "$lo" -gt $((10000 + 2 * $1)) ] || lo=32768
	echo $((10000 + RANDOM % (lo - 10000 - $1)))
}
