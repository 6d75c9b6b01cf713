#!/usr/bin/env bash
# Every script a user runs in bench/, scripts/ and tools/ answers --help
# and -h (exit 0, its own header, nothing run) and refuses an unknown flag
# in one line naming it, exit 2, before any work; and `make help` lists
# the targets (issue 29: five scripts took --help for a build directory or
# ignored it; then sim-check.sh judged a directory "--help" (every line
# "not run", exit 0), format.sh reformatted the tree on --help or a typo'd
# --check, install-deps.sh ran apt-get update and "apt-get install --help",
# layer-graph.sh gave find's error, rpc-*.sh said "no --x/bin/smart-bench").
# Usage: test_scripts_help.sh BIN_DIR (unused: the scripts are the source's)
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
fail=0
for f in "$src"/bench/*.sh "$src"/scripts/*.sh "$src"/tools/*.sh; do
	[ -x "$f" ] || continue # sourced libraries (smartd-lib.sh)
	# what --help must begin with: the header's first line, or a usage
	head=$(sed -n '2s/^# \{0,1\}//p' "$f")
	for h in --help -h; do
		out=$(timeout 20 bash "$f" $h 2>&1); rc=$?
		if [ $rc -eq 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -ge 3 ] &&
			{ [ "$(printf '%s\n' "$out" | head -1)" = "$head" ] ||
				printf '%s\n' "$out" | head -1 | grep -qi '^usage: '; }; then
			echo "ok   ${f##*/} $h"
		else
			echo "FAIL ${f##*/} $h: exit $rc, want the header '$head' or a usage:"
			printf '%s\n' "$out" | head -5; fail=1
		fi
	done
	out=$(timeout 20 bash "$f" --no-such-flag 2>&1); rc=$?
	if [ $rc -eq 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] &&
		printf '%s\n' "$out" | grep -q -- '--no-such-flag'; then
		echo "ok   ${f##*/} --no-such-flag: $out"
	else
		echo "FAIL ${f##*/} --no-such-flag: exit $rc (want 2, one line naming it):"
		printf '%s\n' "$out" | head -5; fail=1
	fi
done
if make -s -C "$src" help 2>&1 | grep -q "^make run "; then echo "ok   make-help"; else
	echo "FAIL make-help"; fail=1; fi
[ $fail -eq 0 ] && echo "scripts_help: all passed" || echo "scripts_help: FAILED"
exit $fail
