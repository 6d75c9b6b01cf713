#!/usr/bin/env bash
# smart-perf's units and columns as perftest's (issue 29): BW average in
# perftest's MB/sec, 2^20 bytes per second (perftest's print_report_bw
# divides by 0x100000), checked against the JSON's ops, size and seconds;
# MsgRate never 0 for a large message; quantiles with 3 significant
# digits; the #bytes column as wide as the size; a title that names the
# transport (no "RDMA" on shm).  The old table said RDMA_Read on shm,
# printed 10^6-byte MB, MsgRate 0.000 at 16 MiB and broke its columns at
# 8-digit sizes.
# Usage: test_perf_units.sh BIN_DIR
set -u
bin=${1:?usage: test_perf_units.sh BIN_DIR}
tmp=$(mktemp -d)
fail=0
trap 'rm -rf "$tmp"' EXIT
ok() { echo "ok   $1"; }
no() { echo "FAIL $1"; cat "$tmp/out"; fail=1; }

p=$bin/smart-perf
run="--seconds 0.3 --blade-size 64M --span 64M"
"$p" $run --size 16M >"$tmp/out" 2>&1 || no "perf-16M ran"
grep -q "BW Test over shm (shared memory, no RDMA)" "$tmp/out" && ok title-transport || no title-transport
grep -q "RDMA_Read" "$tmp/out" && no title-no-rdma-on-shm || ok title-no-rdma-on-shm
row=$(grep -E "^ smart +16777216 " "$tmp/out")
[ -n "$row" ] && ok bytes-column || no bytes-column
# the header's columns start where the row's do
hdr=$(grep -E "^ mode " "$tmp/out")
col() { awk -v s="$1" -v n="$2" 'BEGIN { c = 0; for (i = 1; i <= length(s); i++) { ch = substr(s, i, 1); if (ch != " " && (i == 1 || substr(s, i - 1, 1) == " ")) { c++; if (c == n) { print i; exit } } } }'; }
# (header words: mode #bytes #iterations BW average[MB/sec] MsgRate ...)
aligned=1
for pair in 2:2 3:3 4:4 6:5 7:6; do
	[ "$(col "$hdr" ${pair%:*})" = "$(col "$row" ${pair#*:})" ] || aligned=0
done
[ $aligned -eq 1 ] && ok columns-aligned || no "columns-aligned ('$hdr' / '$row')"
rate=$(echo "$row" | awk '{ print $5 }')
awk -v r="$rate" 'BEGIN { exit !(r > 0) }' && ok "msgrate-not-zero ($rate Mpps)" || no "msgrate-not-zero ($rate)"
"$p" $run --size 4096 --json >"$tmp/out" 2>&1 || no "perf-json ran"
awk -F'[:,]' '{ for (i = 1; i < NF; i++) v[$i] = $(i + 1) }
	END { gsub(/"/, "", v["\"op\""]);
	      rough = v["\"ops\""] * 4096 / v["\"seconds\""] / 1048576;
	      want = v["\"mb_per_s\""] * 1e6 / 1048576;
	      got = v["\"mib_per_s\""];
	      exit !(want > 0 && got / want > 0.9999 && got / want < 1.0001 &&
		     got / rough > 0.98 && got / rough < 1.02) }' "$tmp/out" &&
	ok "mib-per-s (2^20 bytes: perftest's MB/sec)" || no mib-per-s
grep -qE '"p99_us":[0-9]+(\.[0-9]+)?,' "$tmp/out" || no p99-number
v=$(grep -oE '"p99_us":[0-9.]+' "$tmp/out" | cut -d: -f2)
digits=$(echo "$v" | tr -d '.' | sed 's/^0*//' | sed 's/0*$//' | wc -c)
[ "$digits" -le 4 ] && ok "p99-three-digits ($v)" || no "p99-three-digits ($v)"
# every record says where it came from (tool, version, commit, seed,
# command line, UTC time), in JSON and as the CSV's last columns
prov='"tool":"smart-perf","tool_version":"[0-9.]+","commit":"([0-9a-f]+(-dirty)?|unknown)","seed":7,"command":"smart-perf [^"]*--seed 7[^"]*","timestamp":"20[0-9-]+T[0-9:]+Z"}$'
"$p" --seconds 0.2 --blade-size 16M --seed 7 --json --csv "$tmp/r.csv" >"$tmp/out" 2>&1
grep -qE "$prov" "$tmp/out" && ok json-provenance || no json-provenance
head -1 "$tmp/r.csv" | grep -qE ',tool,tool_version,commit,seed,command,timestamp$' &&
	tail -1 "$tmp/r.csv" | grep -qE ',smart-perf,[0-9.]+,[^,]+,7,smart-perf .*,20[0-9-]+T[0-9:]+Z$' &&
	ok csv-provenance || { cat "$tmp/r.csv" >>"$tmp/out"; no csv-provenance; }
"$bin/smart-bench" ycsb --keys 2000 --seconds 0.2 --seed 5 --json >"$tmp/out" 2>&1
grep -qE '"tool":"smart-bench",.*"seed":5,"command":"smart-bench ycsb --keys 2000' "$tmp/out" &&
	ok ycsb-provenance || no ycsb-provenance
# --sweep: a row per size 2..64 (perftest's -a); --lat: perftest's latency
# table, one op at a time, and nothing else with it
"$p" --sweep --size 64 --seconds 0.1 --blade-size 16M >"$tmp/out" 2>&1
rows=$(grep -cE "^ smart +(2|4|8|16|32|64) +[0-9]+ " "$tmp/out")
[ "$rows" -eq 6 ] && ok "sweep-rows (6)" || no "sweep-rows ($rows)"
"$p" --lat --size 8 --seconds 0.1 --blade-size 16M >"$tmp/out" 2>&1
grep -q "t_min\[usec\].*99.9% percentile\[usec\]" "$tmp/out" &&
	grep -qE "^ 8 +[0-9]+ +[0-9.]+ +[0-9.]+ " "$tmp/out" && ok lat-table || no lat-table
"$p" --lat --depth 4 >"$tmp/out" 2>&1
[ $? -eq 2 ] && grep -q "^smart-perf: --lat: " "$tmp/out" && ok lat-depth-refused || no lat-depth-refused
[ $fail -eq 0 ] && echo "perf_units: all passed" || echo "perf_units: FAILED"
exit $fail
