#!/usr/bin/env bash
# The client guest's part of tests/verbs/two-guests.sh: once the server
# guest's smartd listens, smart-ping READ/WRITE/CAS/FAA with --verify
# (data checked end to end), then a short smart-perf.  Each a step with a
# deadline (tests/verbs/steps.sh): a wedged one is killed and named.
# Usage: two-guests-client.sh BIN_DIR SECRET_FILE  (SMART_PEER_IP: the server)
set -u
bin=${1:?usage: two-guests-client.sh BIN_DIR SECRET_FILE}
secret=${2:?usage: two-guests-client.sh BIN_DIR SECRET_FILE}
peer=${SMART_PEER_IP:?SMART_PEER_IP unset}
. "$(dirname "$0")/steps.sh"

# the server guest's smartd accepting on 7470: polled, with a deadline
server_up() {
	local end=$((SECONDS + 50))
	until (exec 3<>"/dev/tcp/$peer/7470") 2>/dev/null; do
		[ $SECONDS -lt $end ] || { echo "no smartd on $peer:7470"; return 1; }
		sleep 0.5
	done
}

STEP_DEADLINE=60 step server-up server_up
for op in read write cas faa; do
	[ "$fail" = 0 ] || break
	STEP_DEADLINE=120 step "ping-$op" "$bin/smart-ping" --transport verbs \
		--secret-file "$secret" --count 20 --interval 0 --verify \
		--op "$op" "$peer:7470"
done
[ "$fail" = 0 ] && STEP_DEADLINE=120 step smart-perf "$bin/smart-perf" \
	--transport verbs --connect "$peer:7470" --secret-file "$secret" \
	--op read --size 8 --threads 1 --depth 8 --seconds 2
steps_end
