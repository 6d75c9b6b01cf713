#!/usr/bin/env bash
# Smoke tests of smart-bench smallbank and tatp (Smart-DTX): --help, short
# runs on two embedded blades with --check and --json (the documented
# fields there, the check passed, no error, no validation failure, round
# trips per type in their protocol's range, docs/dtx.md §3), --txns (an
# exact count), contention, the table and CSV, a database on two smartd
# blades created and kept, opened and checked, a client killed with
# kill -9 and its locks recovered (--recover --check), and the refusals
# of bad input (exit 2).  Asserts no timing.  About 15 s.
# Usage: test_dtx_bench.sh BIN_DIR
set -u
bin=${1:?usage: test_dtx_bench.sh BIN_DIR}
b=$bin/smart-bench
. "$(dirname "$0")/check-lib.sh"
# clean NAME: the last JSON run passed its check, with no error
clean() {
	has "$1-check" '"check":"pass"'
	has "$1-clean" '"errors":0,.*"validation_failures":0,'
}

common=(bench committed_tps attempted_tps abort_rate p50_us p99_us p999_us
	rt_per_txn ops_per_txn bytes_per_txn wbytes_per_txn replicas
	techniques transport
	nic_model threads coros check)
sb_types=(amalgamate balance deposit_checking send_payment transact_saving
	  write_check)
tp_types=(get_subscriber_data get_access_data get_new_destination
	  update_subscriber_data update_location insert_call_forwarding
	  delete_call_forwarding)
per_type() { # per_type TYPE...: rt_, abort_ and wbytes_<type> of each
	local t
	for t in "$@"; do echo "rt_$t abort_$t wbytes_$t"; done
}
short=(--seconds 0.3 --threads 2 --coros 4 --check --json)

check help-top "$b" --help
has help-top-sb "^  smallbank "
has help-top-tp "^  tatp "
check help-sb "$b" smallbank --help
has help-sb-text "--hot-pct P"
has help-sb-common "--replicas N"
check help-tp "$b" tatp --help
has help-tp-text "--subscribers N"

# SmallBank on two embedded blades (1 backup): Balance reads 2 records
# (2 round trips), the writers take 3 (docs/dtx.md §3: the unlocks are
# not waited for), a SendPayment short of money 1, warm caches
check smallbank "$b" smallbank --accounts 20000 --hot 1000 "${short[@]}"
# shellcheck disable=SC2046
fields smallbank-fields "${common[@]}" $(per_type "${sb_types[@]}")
clean smallbank
has smallbank-bench '"bench":"smallbank"'
within smallbank-replicas replicas 1 1
within smallbank-blades blades 2 2
within smallbank-rt-balance rt_balance 2 2.1
within smallbank-rt-deposit rt_deposit_checking 3 3.2
within smallbank-rt-saving rt_transact_saving 3 3.2
within smallbank-rt-payment rt_send_payment 1 3.2
# bytes written by a deposit (16-byte values, records of 48 bytes, docs/dtx.md
# §3 "Bytes written"): the undo log to both blades 2 x (24 + 32 + 40), the
# record's version, meta and value to both copies 2 x 32 (its key stays),
# the unlock 8
within smallbank-wbytes-deposit wbytes_deposit_checking 264 264
within smallbank-wbytes-balance wbytes_balance 0 0
within smallbank-committed committed 1 1e12

check tatp "$b" tatp --subscribers 5000 "${short[@]}"
# shellcheck disable=SC2046
fields tatp-fields "${common[@]}" $(per_type "${tp_types[@]}")
clean tatp
has tatp-bench '"bench":"tatp"'
within tatp-rt-getsub rt_get_subscriber_data 1 1.1
within tatp-rt-getaccess rt_get_access_data 1 1.1

# --ledger: deposits move the tasks' ledger rows too, so the money counted
# (balances minus ledger) does not move, and the check still passes
check ledger "$b" smallbank --accounts 500 --hot 50 --txns 100 --threads 2 \
	--coros 4 --check --json --ledger
clean ledger
within ledger-delta money_delta 0 0

# --txns: exactly threads x coros x N transactions, whatever the aborts
check txns "$b" smallbank --accounts 500 --hot 50 --txns 200 --threads 2 \
	--coros 4 --check --json --replicas 0
clean txns
within txns-committed committed 1600 1600
within txns-blades blades 1 1
check txns-tatp "$b" tatp --subscribers 2000 --txns 100 --threads 1 \
	--coros 8 --check --json --replicas 2
clean txns-tatp
within txns-tatp-committed committed 800 800
within txns-tatp-blades blades 3 3

# contention: 100 hot accounts; the money still adds up
check contention "$b" smallbank --accounts 1000 --hot 100 "${short[@]}"
clean contention
within contention-aborts abort_rate 0.0001 1

# the table and the CSV
check table "$b" smallbank --accounts 5000 --seconds 0.2 --check \
	--csv "$tmp/r.csv"
has table-head "SmallBank on Smart-DTX"
has table-cols "#commits +commit/s +attempt/s +abort-rate +p50\[us\] +p99\[us\] +p999\[us\] +rt/txn +ops/txn +bytes/txn +errors"
has table-types "^ SendPayment +[0-9.]+%  [0-9]+ "
has table-check "^ check: passed.*money [0-9]+ cents"
check table-tatp "$b" tatp --subscribers 2000 --seconds 0.2 --check \
	--csv "$tmp/r.csv"
has table-tatp-types "^ UpdateLocation +[0-9.]+%  [0-9]+ "
if [ "$(wc -l <"$tmp/r.csv")" -eq 3 ] &&
   head -1 "$tmp/r.csv" | grep -q "^bench,techniques,.*committed_tps" &&
   grep -q "^tatp," "$tmp/r.csv"; then echo "ok   csv"; else
	echo "FAIL csv"; cat "$tmp/r.csv"; fail=1; fi

# two smartd blades: create and keep, open and check, a client killed,
# its locks recovered, the database checked
smartds 128M dtx-bench-test-secret 0 1
if [ -n "${addrs[0]}" ] && [ -n "${addrs[1]}" ]; then
	conn=(--connect "${addrs[0]}" --connect "${addrs[1]}"
	      --secret-file "$tmp/secret" --threads 2)
	on=("${conn[@]}" --name sb --accounts 5000)
	check connect-create "$b" smallbank "${on[@]}" --seconds 0.2 --keep \
		--json
	has connect-create-kept '"dropped":false'
	fails connect-exists "database sb exists" "$b" smallbank "${on[@]}" \
		--seconds 0.2
	check connect-open "$b" smallbank "${on[@]}" --seconds 0.2 --open \
		--check --json
	clean connect-open
	within connect-open-accounts accounts 5000 5000
	"$b" smallbank "${on[@]}" --seconds 30 --open >/dev/null 2>&1 &
	victim=$!
	sleep 1
	kill -9 $victim 2>/dev/null
	wait $victim 2>/dev/null
	check connect-recover "$b" smallbank "${on[@]}" --recover --check \
		--json
	has connect-recover-check '"check":"pass"'
	grep -o '"recovered_locks":[0-9]*' "$tmp/out"
	check connect-after "$b" smallbank "${on[@]}" --seconds 0.2 --open \
		--check --json
	clean connect-after
	refuse connect-replicas "replicas: 2 backups need 3 blades" \
		"$b" smallbank "${on[@]}" --replicas 2
	fails open-none "no database nosuch" "$b" tatp "${conn[@]}" --open \
		--name nosuch
else
	echo "FAIL smartd did not start:"; cat "$tmp"/smartd*.log; fail=1
fi

bad() { # bad BENCH FLAG VALUE...: refused, naming the flag
	refuse "bad-$1-$2" "^smart-bench: --$2: " "$b" "$1" "--$2" "${@:3}"
}
bad smallbank accounts 1
bad smallbank hot 0
bad smallbank hot-pct 101
bad smallbank zipf 1
bad smallbank replicas 3
bad smallbank coros 0
bad smallbank txns 0
bad smallbank load-batch 17
bad tatp subscribers 0
bad tatp name ""
refuse hot-over "^smart-bench: --hot: 5000 hot accounts of 1000" \
	"$b" smallbank --accounts 1000 --hot 5000
refuse open-embedded "^smart-bench: --open: needs --connect" \
	"$b" smallbank --open
refuse recover-embedded "^smart-bench: --recover: needs --connect" \
	"$b" tatp --recover
refuse unknown-flag "^smart-bench: --frobnicate: unknown" \
	"$b" tatp --frobnicate
[ $fail -eq 0 ] && echo "dtx bench: all passed" || echo "dtx bench: FAILED"
exit $fail
