#!/usr/bin/env bash
# Smoke tests of smart-bench stream (docs/stream.md §8): --help, a short
# run of every engine on each workload with --check (equal, the JSON
# fields), slash and uppar shipping channel bytes and local none, and the
# refusal of bad input (exit 2); --recover (slash-ck) equal too, with
# its checkpoints counted.  Asserts no timing, only shapes and
# counts.  A few seconds.
# Usage: test_stream_bench.sh BIN_DIR
set -u
bin=${1:?usage: test_stream_bench.sh BIN_DIR}
b=$bin/smart-bench
. "$(dirname "$0")/check-lib.sh"

check help "$b" stream --help
has help-text "--workload ysb\|cm\|nb7\|ro"
for wl in ysb cm nb7 ro; do
	check "$wl" "$b" stream --workload "$wl" --records 20000 --epoch 1000 \
		--window 3000 --rounds 1 --check --json
	fields "$wl-json" workload procs keys slash_rps uppar_rps local_rps \
		one_rps slash_bytes_per_rec uppar_bytes_per_rec \
		slash_lag_p99_ms uppar_lag_p99_ms local_lag_p99_ms \
		one_lag_p99_ms check
	has "$wl-equal" '"check":"equal"'
	within "$wl-slash-bytes" slash_bytes_per_rec 0.001 1e9
	within "$wl-uppar-bytes" uppar_bytes_per_rec 0.001 1e9
done
check table "$b" stream --workload ysb --records 5000 --rounds 1 --check \
	--zipf 0.99 --procs 3
has table-local '^local .* equal$'
# --recover: slash-ck (checkpoints in an embedded blade) beside slash,
# equal to the one-thread run, its checkpoints counted; NB8's rows too
for wl in ysb nb8; do
	check "recover-$wl" "$b" stream --workload "$wl" --records 20000 \
		--epoch 1000 --window 3000 --rounds 1 --engine slash \
		--recover --check --json
	fields "recover-$wl-json" slash_ck_rps slash_ck_ckpts \
		slash_ck_ckpt_bytes_per_rec
	has "recover-$wl-equal" '"check":"equal"'
	within "recover-$wl-ckpts" slash_ck_ckpts 2 1e9
	within "recover-$wl-bytes" slash_ck_ckpt_bytes_per_rec 0.001 1e9
done
refuse recover-uppar "recover" "$b" stream --engine uppar --recover
refuse bad-workload "workload" "$b" stream --workload nope
refuse bad-procs "procs" "$b" stream --procs 0
exit $fail
