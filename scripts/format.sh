#!/usr/bin/env bash
# The project's C layout, by clang-format and .clang-format (Linux kernel
# style: tabs, 80 columns, braces of functions on their own line).
# Usage: scripts/format.sh          reformat every .c/.h in place (tracked,
#                                   or new and not ignored by git)
#        scripts/format.sh --check  list the files that differ; exit 1 if any
#        scripts/format.sh --help   this text
# The check is a ctest (style_format) so that the layout stays applied; it
# skips (77) where clang-format 14, the version .clang-format was tuned on
# and Debian 12's, is missing: another version lays some lines out
# otherwise.
set -euo pipefail
# anything but --check must not reformat the tree: a typo (--chek) used to
# rewrite every file in place, as did --help
case ${1:-} in
'' | --check) [ $# -le 1 ] || { echo "format: one argument at most (see --help)" >&2; exit 2; } ;;
-h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
*) echo "format: $1: unknown argument (see --help)" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
cf=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$cf" ] || ! "$cf" --version | grep -q 'version 14\.'; then
	echo "format: clang-format 14 not found (apt-get install clang-format)"
	exit 77
fi
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.c' '*.h' 2>/dev/null ||
	find src include tools bench tests examples -name '*.[ch]')
if [ "${1:-}" != --check ]; then
	"$cf" -i "${files[@]}"
	exit 0
fi
# One clang-format over every file (--dry-run --Werror: a warning for each
# line it would change, exit 1), not one clang-format and one cmp per file:
# 1 process instead of 2 per file (584 for 292 files), 4.7 s instead of 32
# s on an idle machine, so that a loaded one stays far inside the ctest's
# timeout (a 120-s timeout was hit at a load of 25-34).
rc=0
out=$("$cf" --dry-run --Werror "${files[@]}" 2>&1) || rc=$?
if [ $rc = 0 ]; then
	echo "format: ${#files[@]} files as clang-format lays them out"
	exit 0
fi
bad=$(printf '%s\n' "$out" |
	sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' |
	sort -u)
if [ -z "$bad" ]; then
	printf '%s\n' "$out" # clang-format failed otherwise: say how
	exit 1
fi
printf "format: %s differs from clang-format's layout\n" $bad
exit 1
