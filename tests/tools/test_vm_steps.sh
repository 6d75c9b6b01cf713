#!/usr/bin/env bash
# The VM suites' step machinery, on the host, without a guest:
#  1. tests/verbs/steps.sh: a step past its deadline is killed (its whole
#     process group: nothing of it lives on) and fails naming the step and
#     the deadline; the next step still runs; steps_end names the failed.
#  2. tests/verbs/perftest.sh's ib_once against a fake ib_read_bw that
#     behaves as perftest does (the server waits for its client without a
#     deadline, the client exits at once when nobody listens) but whose
#     server starts listening only after 3 s, as a TCG guest on a loaded
#     host may: the pair must wait for the listener and succeed (the old
#     code slept 1 s, its client failed and the wait for the server never
#     returned: `make test` hung 20 minutes after "pair 2"); and a server
#     that never listens must fail the pair within its listen deadline,
#     the server killed.
# No timing luck: the fake's 3 s are longer than the old 1-s sleep and far
# shorter than the new 20-s listen deadline; the deadline cases check an
# upper bound only.  Needs python3 (the fake's listener); skips without.
# Usage: test_vm_steps.sh BIN_DIR
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# --- 1. a step's deadline ----------------------------------------------------
(
	STEP_DMESG=0	# the host's kernel log says nothing of this step
	. "$here/verbs/steps.sh"
	STEP_DEADLINE=2 step wedged bash -c 'sleep 300 & echo $! >'"$tmp"'/child; wait'
	step next true
	steps_end
) >"$tmp/steps.out" 2>&1
rc=$?
sed 's/^/  | /' "$tmp/steps.out"
grep -q "^FAIL wedged (deadline 2 s passed: killed" "$tmp/steps.out" ||
	bad "the wedged step was not failed at its deadline"
grep -q "^PASS next" "$tmp/steps.out" || bad "the step after it did not run"
grep -q "1 passed, 1 failed (failed: wedged)" "$tmp/steps.out" ||
	bad "steps_end did not name the failed step"
[ $rc -ne 0 ] || bad "steps_end returned 0 with a failed step"
# its child (sleep 300) must be gone: killed with the group (a zombie not
# yet reaped counts as gone)
child=$(cat "$tmp/child" 2>/dev/null)
[ -n "$child" ] || bad "the wedged step left no pid"
st=$(ps -o stat= -p "$child" 2>/dev/null)
case $st in ''|Z*) ;; *) bad "the wedged step's child $child ($st) outlived its deadline" ;; esac

# --- 2. the perftest pair ------------------------------------------------------
# fake ib_read_bw: "... -p PORT -F" serves, "... -p PORT -F IP" is the client
cat >"$tmp/ib_read_bw" <<'EOF'
#!/usr/bin/env bash
port=; ip=
while [ $# -gt 0 ]; do
	case $1 in -p) port=$2; shift 2 ;; -F) ip=${2:-}; shift; [ -n "$ip" ] && shift ;; *) shift ;; esac
done
if [ -z "$ip" ]; then
	[ "$FAKE_SERVER" = never ] && exec sleep 300
	sleep 3		# a slow start: longer than the old 1-s sleep
	exec python3 -c 'import socket,sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)
c, _ = s.accept(); c.recv(1); print("server done")' "$port"
fi
exec 3<>/dev/tcp/127.0.0.1/$port 2>/dev/null ||
	{ echo "Couldn't connect to 127.0.0.1:$port"; exit 1; }
echo x >&3
echo " 8          1000           0.00               0.00               1.234500"
EOF
chmod +x "$tmp/ib_read_bw"
# below the kernel's ephemeral ports (32768 up by default), which an
# outgoing connection of another test may hold (check-lib.sh fixed_port)
port=$((10000 + RANDOM % 20000))
(
	dev=fake bin=/nonexistent SMART_VM_IP=127.0.0.1 PERF_IB=$tmp/ib_read_bw
	. "$here/verbs/perftest.sh"
	t0=$SECONDS
	v=$(FAKE_SERVER=slow ib_once 8 1 $port) || { echo "slow server: pair failed"; exit 1; }
	echo "slow server (listens after 3 s): pair gave '$v' in $((SECONDS - t0)) s"
	[ "$v" = 1.234500 ] || exit 1
	t0=$SECONDS
	if FAKE_SERVER=never PERF_LISTEN_S=2 ib_once 8 1 $((port + 1)); then
		echo "never-listening server: the pair succeeded"; exit 1
	fi
	echo "never-listening server: pair failed after $((SECONDS - t0)) s"
	[ $((SECONDS - t0)) -le 10 ] || exit 1
) >"$tmp/perf.out" 2>&1 || bad "ib_once"
sed 's/^/  | /' "$tmp/perf.out"
pgrep -f "$tmp/ib_read_bw" >/dev/null && bad "a fake ib_read_bw outlived its pair"
[ $fail -eq 0 ] && echo "vm steps: deadlines and the perftest pair hold"
exit $fail
