# Sourced by the verbs test scripts (in-vm.sh, lossy.sh, qp-depth-sweep.sh):
# `step NAME CMD ARGS...` runs one step and prints "=== NAME: CMD" before
# and "PASS NAME (N s)" / "FAIL NAME (status S, N s)" after; `steps_end`
# prints "N passed, N failed" and fails when a step did.
#  - Every step has a deadline: STEP_DEADLINE seconds (default 600; set it
#    for one step as `STEP_DEADLINE=120 step NAME ...`).  CMD runs in a
#    process group of its own; at the deadline the whole group gets
#    SIGTERM, 5 s later SIGKILL, and the step fails with "deadline N s
#    passed": a wedged step ends and says so, instead of holding the suite
#    until an outer timeout that cannot tell where it stood.  CMD may be a
#    shell function.
#  - A failed step is followed by the kernel's last messages (dmesg: rxe's
#    errors, hung tasks) when they can be read, unless STEP_DMESG=0.
#  - STEP_ONLY: run only the steps whose name contains it (empty: all).
#  - step_before NAME / step_after NAME STATUS, when the script defines
#    them, run around each step; step_after failing fails the step (lossy.sh
#    checks its counters there).
pass=0
fail=0
failed=""
STEP_ONLY=${STEP_ONLY:-}

# step_run LIMIT CMD...: CMD in its own process group, killed at LIMIT
# seconds; CMD's status, or 124 when the deadline passed (the watchdog
# leaves a mark before it kills).
step_run() {
	local limit=$1 pid wd rc mark
	shift
	mark=$(mktemp) && rm -f "$mark" || return 1
	set -m
	"$@" &
	pid=$!
	( sleep "$limit"; : >"$mark"; kill -TERM -- -"$pid"; sleep 5
	  kill -KILL -- -"$pid" ) >/dev/null 2>&1 &
	wd=$!
	set +m
	wait "$pid"
	rc=$?
	kill -- -"$wd" 2>/dev/null
	wait "$wd" 2>/dev/null
	if [ -e "$mark" ]; then
		rm -f "$mark"
		# what the group left behind (children that ignored TERM)
		kill -KILL -- -"$pid" 2>/dev/null
		return 124
	fi
	return "$rc"
}

step() {
	local name=$1 t0=$SECONDS rc limit=${STEP_DEADLINE:-600} why
	shift
	case $name in *"$STEP_ONLY"*) ;; *) return 0 ;; esac
	echo "=== $name: $* (deadline $limit s)"
	if declare -F step_before >/dev/null; then step_before "$name"; fi
	step_run "$limit" "$@"
	rc=$?
	why="status $rc"
	[ "$rc" = 124 ] && why="deadline $limit s passed: killed"
	if declare -F step_after >/dev/null; then
		step_after "$name" "$rc" || { [ "$rc" = 0 ] && rc=1; }
	fi
	if [ "$rc" = 0 ]; then
		echo "PASS $name ($((SECONDS - t0)) s)"; pass=$((pass + 1))
	else
		echo "FAIL $name ($why, $((SECONDS - t0)) s)"
		fail=$((fail + 1))
		failed+=" $name"
		if [ "${STEP_DMESG:-1}" = 1 ] && dmesg >/dev/null 2>&1; then
			echo "--- kernel's last messages after $name:"
			dmesg | tail -n 15 | sed 's/^/  | /'
		fi
	fi
}

steps_end() {
	echo "$pass passed, $fail failed${failed:+ (failed:$failed)}"
	[ "$fail" -eq 0 ]
}
