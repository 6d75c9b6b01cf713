#!/usr/bin/env bash
# The verbs part of `make test`, run inside ONE boot of the Soft-RoCE VM
# (tests/vm/vm-run.sh): the transport conformance suite on verbs (and its
# cases that hold without atomics, on domains with atomics off), the
# integration tests with blades and clients talking over rxe0, a short
# smart-perf, and perftest's ib_read_bw against smart-perf with the same
# number of outstanding reads.  Usage: in-vm.sh BUILD_DIR
# Prints one "PASS name" / "FAIL name" line per step and a closing
# "N passed, N failed" line; exits non-zero when a step failed.  Every
# step has a deadline (below); a step past it is killed and named.
set -u
build=${1:?usage: in-vm.sh BUILD_DIR}
bin=$build/bin
dev=${SMART_DEVICE:-rxe0}
export SMART_TRANSPORT=verbs SMART_TEST_TRANSPORT=verbs

STEP_ONLY=${2:-}
. "$(dirname "$0")/steps.sh"

# Each step's deadline (tests/verbs/steps.sh) is a few times what it takes
# in the guest on a loaded host (the whole run: ~3 minutes), so that a
# wedged step is named and ended long before the guest's own timeout.
STEP_DEADLINE=60 step devinfo ibv_devinfo -d "$dev"
STEP_DEADLINE=420 step conformance env SMART_CONF_SCALE=${SMART_CONF_SCALE:-10} "$bin/test_transport_verbs"
STEP_DEADLINE=240 step conformance-noatomics "$bin/test_transport_verbs_noatomics"
for t in test_core test_smartd_clients test_one_sided test_flush_storm; do
	[ -x "$bin/$t" ] && STEP_DEADLINE=300 step "$t" "$bin/$t"
done
# recovery of a stream of several executors over verbs: the checkpoint
# area's CAS, WRITEs and READs, a death inside a final cut, a part ahead
# refused before the rollback, a leader holding a source's next epoch
for c in final_cut unrolled take_ahead; do
	STEP_DEADLINE=120 step "stream-cuts-$c" "$bin/test_stream_cuts" "$c"
done
STEP_DEADLINE=120 step dead-blade "$(dirname "$0")/dead-blade.sh" "$bin"
# a few send-queue depths filled (the full sweep: qp-depth-sweep.sh BUILD_DIR)
STEP_DEADLINE=300 step qp-depth-sweep "$(dirname "$0")/qp-depth-sweep.sh" "$build" 16 600 max
STEP_DEADLINE=90 step smart-perf "$bin/smart-perf" --transport verbs --op read --size 8 \
	--threads 1 --depth 8 --seconds 2
# instructions per 8-B READ on verbs (callgrind, clock-free; bench/op-cost.sh):
# the library's part and libibverbs' with rxe's provider, under a ceiling
# about 1.3x of the count (1024 at cd79a4d, 956 after the op path's fifth
# pass, docs/design.md §9.3-§9.4, 813 after the tenth, §9.9, 758.5 after
# the eleventh, §9.10: a regression fails here)
STEP_DEADLINE=300 step op-cost-verbs "$(dirname "$0")/../../bench/op-cost.sh" \
	--bin "$bin" --transport verbs --ops read --depths 8 --batches 1 \
	--apps none --no-raw --ceiling 1000

# perftest versus smart-perf (tests/verbs/perftest.sh)
. "$(dirname "$0")/perftest.sh"
STEP_DEADLINE=240 step perftest-compare compare

steps_end
