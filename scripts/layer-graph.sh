#!/bin/bash
# What calls what, from a build's objects (docs/design.md §2): a markdown
# table of the references between the library's layers (caller row, callee
# column, distinct symbols), then, for each layer named with --files, one
# line per pair of its files that reference each other ("a -> b: syms").
# A reference is an undefined symbol of one object that another object of
# the library defines; the layers are the build's smart_<layer> object
# libraries, bottom up in the order given (default: the build's own).
#
# usage: scripts/layer-graph.sh BUILD_DIR [--layers "util wire ..."]
#                               [--files LAYER]...
# --help or -h prints this header.
set -euo pipefail
case ${1:-} in
-h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
'') echo "$0: want BUILD_DIR first (see --help)" >&2; exit 2 ;;
-*) echo "$0: $1: unknown flag, want BUILD_DIR first (see --help)" >&2; exit 2 ;;
esac
build=$1
shift
[ -d "$build/CMakeFiles" ] || { echo "$0: $build: not a build directory (no CMakeFiles)" >&2; exit 2; }
layers="" files=()
while [ $# -gt 0 ]; do
	case $1 in
	--layers) layers=$2; shift 2 ;;
	--files) files+=("$2"); shift 2 ;;
	*) echo "$0: unknown argument $1" >&2; exit 2 ;;
	esac
done
if [ -z "$layers" ]; then	# the layers of the sources this script is in
	layers=$(sed -n 's/^set(SMART_LAYERS \(.*\))$/\1/p' \
		 "$(dirname "$0")/../CMakeLists.txt")
fi
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# one line per reference: caller-layer caller-file callee-layer callee-file sym
for l in $layers; do
	find "$build/CMakeFiles/smart_$l.dir" -name '*.o' | sort | while read -r o; do
		f=$(basename "$o" .c.o)
		nm --defined-only -g "$o" | awk -v l="$l" -v f="$f" \
			'NF == 3 && $2 ~ /[A-TV-Z]/ { print "D", l, f, $3 }'
		nm -u "$o" | awk -v l="$l" -v f="$f" \
			'$1 == "U" { print "U", l, f, $2 }'
	done
done | awk '
	$1 == "D" { dl[$4] = $2; df[$4] = $3; next }
	{ u[++n] = $2 " " $3 " " $4 }
	END { for (i = 1; i <= n; i++) { split(u[i], a, " ")
		if (a[3] in dl && !(a[1] == dl[a[3]] && a[2] == df[a[3]]))
			print a[1], a[2], dl[a[3]], df[a[3]], a[3] } }' |
	sort -u >"$tmp"

echo "| caller \\ callee | $(echo $layers | sed 's/ / | /g') |"
echo "|$(for l in $layers; do printf ' --- |'; done) --- |"
for a in $layers; do
	printf '| %s |' "$a"
	for b in $layers; do
		n=$(awk -v a="$a" -v b="$b" '$1 == a && $3 == b { print $5 }' \
		    "$tmp" | sort -u | wc -l)
		if [ "$a" = "$b" ]; then printf ' (%s) |' "$n"
		elif [ "$n" = 0 ]; then printf ' |'
		else printf ' %s |' "$n"; fi
	done
	echo
done
for l in "${files[@]}"; do
	echo
	echo "Files of $l that call each other:"
	echo
	awk -v l="$l" '$1 == l && $3 == l && $2 != $4 { k = $2 " -> " $4
		s[k] = s[k] " " $5 } END { for (k in s) print "    " k ":" s[k] }' \
		"$tmp" | sort
done
