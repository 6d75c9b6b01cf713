#!/usr/bin/env bash
# tests/vm/vm-rpc.sh - messaging (include/smart/rpc.h) on real verbs between
# two Soft-RoCE guests, side by side with perftest, in ONE boot of
# tests/vm/vm-two-guests.sh.
#
# Usage: tests/vm/vm-rpc.sh [BUILD_DIR]        (default: build)
#
# Each round, server guest (169.254.78.1) and client guest (169.254.78.2)
# step in lockstep (a busybox-nc barrier on the server, TCP port 7499):
#   1. ib_send_lat -s SIZE -n ITERS          (perftest, RC SEND ping-pong)
#   2. ib_send_bw  -s SIZE -D SECONDS        (perftest, SEND message rate)
#   3. the RPC benchmark's server (--serve --listen 169.254.78.1:PORT) and
#      two clients from the other guest (--connect): echo calls (one in
#      flight, round-trip p50) and one-way messages (--oneway, the rate
#      the server confirmed handled); in round 1 also echo calls of
#      SMART_RPC_VM_BIG bytes (64 MiB: both ways by rendezvous, 64-KiB
#      READ fragments, CRC-32C checked by the library, every answer
#      compared with its request by the benchmark).
# The benchmark is `smart-bench rpc` when BUILD_DIR has it, else the
# interim `smart-rpc-bench` (the flags used are common to both).
# Checks: every step ran and produced its figure, and no receiver-not-ready
# NAK happened on either rxe device during the RPC steps (docs/rpc.md §4:
# the seq-ack window promises none; rxe's rcvd_rnr_err / send_rnr_err).
# At the end a table: ours vs perftest, latency (us) and message rate,
# medians over the rounds.
#
# Environment: SMART_RPC_VM_ROUNDS (3), SMART_RPC_VM_SECONDS (3, per timed
# step), SMART_RPC_VM_SIZE (32 bytes), SMART_RPC_VM_BIG (64M; 0: no big
# echo), SMART_RPC_VM_BIG_SECONDS (20), SMART_RPC_VM_ITERS (1000,
# ib_send_lat iterations), SMART_RPC_VM_PIN (1: every tool on CPU 0, the
# NIC's interrupts on CPU 1; 0: the scheduler's choice); the harness's
# SMART_VM_* (SMART_VM_TIMEOUT defaults to 600 here).  The guests are
# wired over UDP and booted with tsc=reliable where the harness offers it
# (SMART_VM_WIRE, SMART_VM_CMDLINE); over its TCP wire every SEND
# ping-pong (ours and ib_send_lat alike) waits for delayed TCP ACKs
# (Nagle): 20-50 ms a round trip instead of ~1 ms.
#
# Figures under TCG are a functional signal and a ratio, never a gate:
# the two guests share the host's cores with whatever else runs there.
#
# Exit status: 0 all steps passed; 1 a step failed or a figure is missing;
# the harness's 124 (timeout), 125 (guest setup) and 77 (SKIP: no qemu).
set -u
here=$(cd "$(dirname "$0")" && pwd)

# ---- inside a guest ----------------------------------------------------

ROUNDS=${SMART_RPC_VM_ROUNDS:-3}
SECS=${SMART_RPC_VM_SECONDS:-3}
SIZE=${SMART_RPC_VM_SIZE:-32}
ITERS=${SMART_RPC_VM_ITERS:-1000}
BIG=${SMART_RPC_VM_BIG:-64M}
BIG_SECS=${SMART_RPC_VM_BIG_SECONDS:-20}
DEV=rxe0
BAR=7499
HC=/sys/class/infiniband/$DEV/ports/1/hw_counters

rnr_count() # RNR NAKs received + sent by this guest's rxe0
{
	echo $(($(cat $HC/rcvd_rnr_err) + $(cat $HC/send_rnr_err)))
}

listening() # TCP port $1 has a listener in this guest
{
	[ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]
}

wait_listen() # up to 30 s
{
	for _ in $(seq 300); do
		listening "$1" && return 0
		sleep 0.1
	done
	echo "ERROR: nothing listens on port $1" >&2
	return 1
}

bar_wait() # server: until the client knocks (at most 300 s)
{
	timeout 300 busybox nc -l -p $BAR </dev/null >/dev/null 2>&1 ||
		{ echo "ERROR: barrier: no knock from the client" >&2; return 1; }
}

bar_knock() # client: knock once the server listens (at most 300 s)
{
	for _ in $(seq 1500); do
		(exec 3<>"/dev/tcp/$SMART_PEER_IP/$BAR") 2>/dev/null && return 0
		sleep 0.2
	done
	echo "ERROR: barrier: the server never listened" >&2
	return 1
}

# The benchmark as an array: smart-bench rpc, or smart-rpc-bench.
bench_cmd()
{
	BENCH=("$SMART_RPC_VM_BENCH")
	[ -n "${SMART_RPC_VM_BENCH_SUB:-}" ] && BENCH+=("$SMART_RPC_VM_BENCH_SUB")
	BENCH+=(--transport verbs --secret-file "$SMART_RPC_VM_SECRET")
}

# a JSON number field of the benchmark's one-line record
json_field() # KEY FILE
{
	sed -n "s/.*\"$1\":\([-0-9.e+]*\).*/\1/p" "$2" | tail -1
}

# messages per second in millions: msgs / seconds where the record has
# both (mrps is printed with 3 decimals only), else its mrps
json_rate() # FILE
{
	local m s
	m=$(json_field msgs "$1")
	s=$(json_field seconds "$1")
	if [ -n "$m" ] && [ -n "$s" ]; then
		awk -v m="$m" -v s="$s" 'BEGIN { if (s > 0) printf "%.6f", m / s / 1e6 }'
	else
		json_field mrps "$1"
	fi
}

# Same CPU placement for every tool: the NIC's interrupts on CPU 1, the
# benchmarks (perftest's and ours, one busy-polling thread each) on CPU 0.
# Left to the scheduler, a poller that lands on the CPU taking the receive
# interrupts made ib_send_lat ~5x slower in one run than on the other one.
PIN=()
place()
{
	local irq
	[ "${SMART_RPC_VM_PIN:-1}" = 1 ] || return 0
	for irq in $(awk '/virtio.*-(input|output)/ { sub(":", "", $1); print $1 }' /proc/interrupts); do
		echo 1 >"/proc/irq/$irq/smp_affinity_list" 2>/dev/null
	done
	PIN=(taskset -c 0)
}

in_server()
{
	local r lat_p bw_p rpc_p pid rc rnr0 ok=1 out=/tmp/vm-rpc.srv
	bench_cmd
	place
	for r in $(seq "$ROUNDS"); do
		lat_p=$((18515 + 3 * r)); bw_p=$((lat_p + 1)); rpc_p=$((7480 + r))
		# 1. ib_send_lat
		timeout 300 "${PIN[@]}" ib_send_lat -d $DEV -s "$SIZE" -n "$ITERS" -F -p $lat_p \
			>$out.lat 2>&1 &
		pid=$!
		wait_listen $lat_p && bar_wait || return 1
		wait $pid || { ok=0; echo "ERROR: ib_send_lat server:"; cat $out.lat; }
		# 2. ib_send_bw
		timeout 300 "${PIN[@]}" ib_send_bw -d $DEV -s "$SIZE" -D "$SECS" -F -p $bw_p \
			>$out.bw 2>&1 &
		pid=$!
		wait_listen $bw_p && bar_wait || return 1
		wait $pid || { ok=0; echo "ERROR: ib_send_bw server:"; cat $out.bw; }
		# 3. the RPC server, for the client's echo and one-way runs
		rnr0=$(rnr_count)
		"${PIN[@]}" "${BENCH[@]}" --serve --listen "$SMART_VM_IP:$rpc_p" \
			>$out.rpc 2>$out.rpc.err &
		pid=$!
		wait_listen $rpc_p || { cat $out.rpc.err; return 1; }
		bar_wait || return 1	# the client starts
		bar_wait || return 1	# the client is done
		kill -TERM $pid
		wait $pid
		rc=$?
		sed 's/^/  /' $out.rpc.err
		[ $rc = 0 ] || { ok=0; echo "ERROR: the RPC server exited $rc"; }
		echo "RESULT server round=$r rnr=$(($(rnr_count) - rnr0)) rc=$rc"
	done
	[ $ok = 1 ]
}

in_client()
{
	local r lat_p bw_p rpc_p rnr0 lat bw echo_p50 echo_mrps ow ok=1
	local out=/tmp/vm-rpc.cli
	bench_cmd
	place
	echo "INFO bench=${SMART_RPC_VM_BENCH##*/}${SMART_RPC_VM_BENCH_SUB:+ $SMART_RPC_VM_BENCH_SUB} wire=${SMART_VM_WIRE:-tcp} clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource) pinned=${PIN[*]:-no}"
	for r in $(seq "$ROUNDS"); do
		lat_p=$((18515 + 3 * r)); bw_p=$((lat_p + 1)); rpc_p=$((7480 + r))
		bar_knock || return 1
		timeout 300 "${PIN[@]}" ib_send_lat -d $DEV -s "$SIZE" -n "$ITERS" -F -p $lat_p \
			"$SMART_PEER_IP" >$out.lat 2>&1 || { ok=0; cat $out.lat; }
		# #bytes #iterations t_min t_max t_typical ...: t_typical (us)
		lat=$(awk -v s="$SIZE" '$1 == s && NF >= 5 { v = $5 } END { print v }' $out.lat)
		bar_knock || return 1
		timeout 300 "${PIN[@]}" ib_send_bw -d $DEV -s "$SIZE" -D "$SECS" -F -p $bw_p \
			"$SMART_PEER_IP" >$out.bw 2>&1 || { ok=0; cat $out.bw; }
		# #bytes #iterations BW-peak BW-average MsgRate[Mpps]
		bw=$(awk -v s="$SIZE" '$1 == s && NF >= 5 { v = $5 } END { print v }' $out.bw)
		bar_knock || return 1
		rnr0=$(rnr_count)
		timeout 300 "${PIN[@]}" "${BENCH[@]}" --connect "$SMART_PEER_IP:$rpc_p" \
			--size "$SIZE" --seconds "$SECS" --json >$out.echo 2>&1 ||
			{ ok=0; cat $out.echo; }
		timeout 300 "${PIN[@]}" "${BENCH[@]}" --connect "$SMART_PEER_IP:$rpc_p" \
			--size "$SIZE" --seconds "$SECS" --json --oneway >$out.ow 2>&1 ||
			{ ok=0; cat $out.ow; }
		big=
		if [ "$r" = 1 ] && [ "$BIG" != 0 ]; then
			timeout 300 "${PIN[@]}" "${BENCH[@]}" --connect "$SMART_PEER_IP:$rpc_p" \
				--size "$BIG" --seconds "$BIG_SECS" --timeout 240000 \
				--json >$out.big 2>&1 ||
				{ ok=0; cat $out.big; }
			big=" big_size=$(json_field size $out.big) big_calls=$(json_field msgs $out.big) big_gbps=$(json_field gbps $out.big) big_p50_ms=$(awk -v u="$(json_field p50_us $out.big)" 'BEGIN { if (u != "") printf "%.1f", u / 1000 }') big_errors=$(json_field errors $out.big) big_rndv=$(json_field rndv_sent $out.big)"
		fi
		bar_knock || return 1
		echo_p50=$(json_field p50_us $out.echo)
		echo_mrps=$(json_rate $out.echo)
		ow=$(json_rate $out.ow)
		echo "RESULT client round=$r lat_us=${lat:-NA} bw_mpps=${bw:-NA} echo_p50_us=${echo_p50:-NA} echo_mrps=${echo_mrps:-NA} oneway_mrps=${ow:-NA}${big} rnr=$(($(rnr_count) - rnr0))"
	done
	[ $ok = 1 ]
}

if [ "${1:-}" = --in-guest ]; then
	case ${SMART_VM_ROLE:-} in
	server) in_server ;;
	client) in_client ;;
	*) echo "vm-rpc: --in-guest outside a two-guest VM" >&2; exit 2 ;;
	esac
	exit
fi

# ---- on the host ---------------------------------------------------------

build=$(cd "${1:-build}" && pwd) || { echo "usage: $0 [BUILD_DIR]" >&2; exit 2; }
vm=$here/vm-two-guests.sh
if "$build/bin/smart-bench" rpc --help >/dev/null 2>&1; then
	export SMART_RPC_VM_BENCH=$build/bin/smart-bench SMART_RPC_VM_BENCH_SUB=rpc
elif [ -x "$build/bin/smart-rpc-bench" ]; then
	export SMART_RPC_VM_BENCH=$build/bin/smart-rpc-bench SMART_RPC_VM_BENCH_SUB=
else
	echo "vm-rpc: no RPC benchmark in $build/bin (smart-bench rpc, smart-rpc-bench)" >&2
	exit 1
fi

# the secret: in the build directory, which the guests see read-only
export SMART_RPC_VM_SECRET=$build/vm-rpc.secret
printf 'vm-rpc-secret-%s%s' "$RANDOM" "$RANDOM" >"$SMART_RPC_VM_SECRET" &&
	chmod 600 "$SMART_RPC_VM_SECRET" || exit 1
log=$(mktemp "${TMPDIR:-/tmp}/vm-rpc.XXXXXX")
trap 'rm -f "$SMART_RPC_VM_SECRET" "$log"' EXIT

export SMART_RPC_VM_ROUNDS=${SMART_RPC_VM_ROUNDS:-3}
export SMART_RPC_VM_SIZE=${SMART_RPC_VM_SIZE:-32}
export SMART_VM_TIMEOUT=${SMART_VM_TIMEOUT:-600}
# A UDP wire (no Nagle) and the TSC as the guests' clocksource (clock
# reads without an emulated HPET), where the harness has them.
export SMART_VM_WIRE=${SMART_VM_WIRE:-udp}
export SMART_VM_CMDLINE=${SMART_VM_CMDLINE:-tsc=reliable}
if ! grep -q SMART_VM_WIRE "$vm"; then
	echo "vm-rpc: NOTE: this harness wires the guests over TCP: SEND ping-pong latencies (ours and ib_send_lat) include delayed-ACK waits"
	export SMART_VM_WIRE=tcp	# what the guests report
fi
grep -q SMART_VM_CMDLINE "$here/lib.sh" ||
	echo "vm-rpc: NOTE: this harness cannot set the guests' clocksource (hpet: clock reads are emulated MMIO)"

t0=$SECONDS
"$vm" --server-must-exit \
	--server "exec bash $here/vm-rpc.sh --in-guest" \
	--client "exec bash $here/vm-rpc.sh --in-guest" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
[ "$rc" = 77 ] && exit 77

# medians per column over the rounds, and the table
awk -v rounds="$SMART_RPC_VM_ROUNDS" -v size="$SMART_RPC_VM_SIZE" \
    -v secs="$((SECONDS - t0))" -v rc="$rc" '
function med(key,   n, v, i, j, t, x) {
	n = 0
	for (i = 1; i <= nr; i++) {
		x = val[i, key]
		if (x != "" && x != "NA") v[++n] = x + 0
	}
	if (!n) return "NA"
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
		if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function f(x, fmt) { return x == "NA" ? "NA" : sprintf(fmt, x) }
function ratio(a, b) { return a == "NA" || b == "NA" || b == 0 ? "NA" : sprintf("%.2f", a / b) }
/^\[client\] INFO / { sub(/^\[client\] INFO /, ""); info = $0 }
/^\[client\] RESULT / {
	nr++
	for (i = 3; i <= NF; i++) { split($i, kv, "="); val[nr, kv[1]] = kv[2] }
	if ($0 ~ /=NA/) missing++
	crnr += val[nr, "rnr"]
}
/^\[server\] RESULT / {
	ns++
	for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "rnr") srnr += kv[2]; if (kv[1] == "rc" && kv[2] != 0) sbad++ }
}
END {
	lat = med("lat_us"); bw = med("bw_mpps")
	p50 = med("echo_p50_us"); em = med("echo_mrps"); ow = med("oneway_mrps")
	ours_lat = p50 == "NA" ? "NA" : p50 / 2
	ib_rtt = lat == "NA" ? "NA" : lat * 2
	printf "\nvm-rpc: %d-B messages, two TCG guests over Soft-RoCE, median of %d/%d rounds (%s)\n", size, nr, rounds, info
	printf "%-34s %12s %12s %16s\n", "", "latency us", "round trip", "rate K msg/s"
	printf "%-34s %12s %12s %16s\n", "", "(RTT/2)", "us", ""
	printf "%-34s %12s %12s %16s\n", "ours: echo p50 / one-way rate", f(ours_lat, "%.1f"), f(p50, "%.1f"), f(ow == "NA" ? "NA" : ow * 1000, "%.1f")
	printf "%-34s %12s %12s %16s\n", "perftest: ib_send_lat / ib_send_bw", f(lat, "%.1f"), f(ib_rtt, "%.1f"), f(bw == "NA" ? "NA" : bw * 1000, "%.1f")
	printf "%-34s %12s %12s %16s\n", "ours / perftest", ratio(ours_lat, lat), ratio(p50, ib_rtt), ratio(ow, bw)
	printf "(ours echo: %s K calls/s; ib_send_lat t_typical is half a round trip)\n", f(em == "NA" ? "NA" : em * 1000, "%.2f")
	bad = 0
	if (nr != rounds || ns != rounds) { printf "FAIL: %d client and %d server rounds of %d reported\n", nr, ns, rounds; bad = 1 }
	if (missing) { printf "FAIL: %d rounds lack a figure (NA above)\n", missing; bad = 1 }
	if (crnr || srnr) { printf "FAIL: receiver-not-ready NAKs during the RPC steps: client %d, server %d\n", crnr, srnr; bad = 1 }
	if (sbad) { printf "FAIL: the RPC server failed in %d rounds\n", sbad; bad = 1 }
	if (rc != 0) { printf "FAIL: the two-guest run exited %d\n", rc; bad = 1 }
	if (val[1, "big_size"] != "") {
		printf "big echo: %s B each way by rendezvous, %s calls answered byte for byte, %s Gb/s (payload both ways counted once), p50 %s ms, %s errors, %s messages sent by rendezvous\n", val[1, "big_size"], val[1, "big_calls"], val[1, "big_gbps"], val[1, "big_p50_ms"], val[1, "big_errors"], val[1, "big_rndv"]
		if (val[1, "big_calls"] + 0 < 1 || val[1, "big_errors"] != "0") { printf "FAIL: the big echo answered no call or had errors\n"; bad = 1 }
	}
	printf "%s (%d s)\n", bad ? "vm-rpc: FAIL" : "vm-rpc: PASS", secs
	exit bad
}' "$log"
st=$?
case $rc in 124|125) exit "$rc" ;; esac
exit "$st"
