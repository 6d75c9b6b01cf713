# Sourced by the verbs test scripts (in-vm.sh, lossy.sh, qp-depth-sweep.sh):
# `step NAME CMD ARGS...` runs one step and prints "=== NAME: CMD" before
# and "PASS NAME (N s)" / "FAIL NAME (status S, N s)" after; `steps_end`
# prints "N passed, N failed" and fails when a step did.
#  - STEP_ONLY: run only the steps whose name contains it (empty: all).
#  - step_before NAME / step_after NAME STATUS, when the script defines
#    them, run around each step; step_after failing fails the step (lossy.sh
#    checks its counters there).
pass=0
fail=0
STEP_ONLY=${STEP_ONLY:-}

step() {
	local name=$1 t0=$SECONDS rc
	shift
	case $name in *"$STEP_ONLY"*) ;; *) return 0 ;; esac
	echo "=== $name: $*"
	if declare -F step_before >/dev/null; then step_before "$name"; fi
	"$@"
	rc=$?
	if declare -F step_after >/dev/null; then
		step_after "$name" "$rc" || { [ "$rc" = 0 ] && rc=1; }
	fi
	if [ "$rc" = 0 ]; then
		echo "PASS $name ($((SECONDS - t0)) s)"; pass=$((pass + 1))
	else
		echo "FAIL $name (status $rc, $((SECONDS - t0)) s)"; fail=$((fail + 1))
	fi
}

steps_end() {
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}
