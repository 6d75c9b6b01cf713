# Sourced by tests/verbs/in-vm.sh: perftest's ib_read_bw against
# smart-perf, 8-byte READs, 8 outstanding, same device, three alternating
# pairs; prints each pair and the medians and their ratio.
#
# Why each run is bounded and ordered as it is: ib_read_bw's server waits
# for its client without a deadline, and a client that finds no listener
# exits at once ("Couldn't connect").  The first version started the
# server, slept 1 s and then waited for it unbounded: on a loaded host a
# TCG guest may take longer than that to bring ib_read_bw to its listen(),
# the client failed, and the wait for the server hung `make test` for 20
# minutes after "pair 2" with nothing saying where.  Now the client starts
# only once the server's port is listening (polled, with a deadline),
# every process runs under `timeout`, a failure kills the server and shows
# both sides' output, and each pair listens on a port of its own (no
# previous server or TIME_WAIT on it).
#
# Knobs: PERF_IB (ib_read_bw), PERF_LISTEN_S (20: time for the server to
# listen), PERF_SLACK_S (30: beyond the run's seconds for either side).
# Needs $dev, $bin; SMART_VM_IP.

# Is TCP port $1 listening?  (ss from iproute2; /proc as a fallback)
perf_listening() {
	if command -v ss >/dev/null; then
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q .
	else
		awk -v p="$(printf ':%04X' "$1")" \
			'$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 }
			 END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
	fi
}

# perf_wait_listen PORT PID: 0 once PORT listens; 1 when PID died or
# PERF_LISTEN_S passed first.
perf_wait_listen() {
	local port=$1 pid=$2 end=$((SECONDS + ${PERF_LISTEN_S:-20}))
	while ! perf_listening "$port"; do
		kill -0 "$pid" 2>/dev/null || return 1
		[ $SECONDS -lt $end ] || return 1
		sleep 0.1
	done
}

# ib_once OUTSTANDING SECONDS PORT: prints ib_read_bw's MsgRate[Mpps].
ib_once() {
	local outs=$1 secs=$2 port=$3 ip=${SMART_VM_IP:-169.254.77.1}
	local ib=${PERF_IB:-ib_read_bw} lim=$(($2 + ${PERF_SLACK_S:-30}))
	local srv src rc=0 log=/tmp/ibrd.$port
	timeout -k 5 $lim $ib -d "$dev" -s 8 -o $outs -D $secs -p $port -F \
		>$log.srv 2>&1 &
	srv=$!
	if ! perf_wait_listen $port $srv; then
		echo "ib_read_bw server: not listening on port $port after ${PERF_LISTEN_S:-20} s" >&2
		rc=1
	else
		timeout -k 5 $lim $ib -d "$dev" -s 8 -o $outs -D $secs -p $port \
			-F $ip >$log.cli 2>&1 || rc=$?
	fi
	[ $rc -eq 0 ] || kill $srv 2>/dev/null
	wait $srv
	src=$?
	[ $rc -ne 0 ] || rc=$src
	if [ $rc -ne 0 ]; then
		echo "ib_read_bw pair on port $port failed (status $rc; 124: its timeout)" >&2
		tail -n 15 $log.cli $log.srv >&2 2>/dev/null
		rm -f $log.cli $log.srv
		return 1
	fi
	awk '$1 == 8 && NF >= 5 { v = $5 } END { print v }' $log.cli
	rm -f $log.cli $log.srv
}

# smart_once DEPTH SECONDS: prints smart-perf's Mops.
smart_once() {
	timeout -k 5 $(($2 + ${PERF_SLACK_S:-30})) "$bin/smart-perf" \
		--transport verbs --op read --size 8 --threads 1 --depth $1 \
		--seconds $2 --techniques None --json |
		sed -n 's/.*"mops":\([0-9.]*\).*/\1/p'
}

compare() {
	local outs=8 secs=3 i a b ib="" sm=""
	for i in 1 2 3; do
		a=$(ib_once $outs $secs $((18515 + i))) || return 1
		b=$(smart_once $outs $secs) || return 1
		[ -n "$a" ] && [ -n "$b" ] ||
			{ echo "pair $i: no figure (ib_read_bw '$a', smart-perf '$b')"; return 1; }
		echo "pair $i: ib_read_bw $a Mpps, smart-perf $b Mops"
		ib="$ib $a"; sm="$sm $b"
	done
	awk -v a="$sm" -v b="$ib" 'function med(s,  n, v, i, j, t) {
		n = split(s, v, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
			if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		return v[int((n + 1) / 2)] }
	BEGIN { x = med(a); y = med(b)
		printf "verbs READ 8 B, 8 outstanding, median of 3 alternating pairs: smart-perf %.4f Mops, ib_read_bw %.4f Mpps, ratio %.2f\n", x, y, (y > 0 ? x / y : 0) }'
}
