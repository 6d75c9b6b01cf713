#!/usr/bin/env bash
# Every script a user runs in bench/ answers --help and -h (exit 0, some
# text, nothing run), and `make help` lists the targets (issue 29: five
# scripts took --help for a build directory or ignored it).
# Usage: test_scripts_help.sh BIN_DIR (unused: the scripts are the source's)
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
fail=0
for f in "$src"/bench/*.sh; do
	[ -x "$f" ] || continue # sourced libraries (smartd-lib.sh)
	for h in --help -h; do
		out=$(timeout 20 bash "$f" $h 2>&1); rc=$?
		if [ $rc -eq 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -ge 3 ]; then
			echo "ok   ${f##*/} $h"
		else
			echo "FAIL ${f##*/} $h: exit $rc:"; printf '%s\n' "$out" | head -5; fail=1
		fi
	done
done
if make -s -C "$src" help 2>&1 | grep -q "^make run "; then echo "ok   make-help"; else
	echo "FAIL make-help"; fail=1; fi
[ $fail -eq 0 ] && echo "scripts_help: all passed" || echo "scripts_help: FAILED"
exit $fail
