#!/bin/bash
# The layer check (docs/design.md §2): reads the layers' static archives
# with nm and fails on
#  - an undefined symbol of a layer that a layer ABOVE it defines (an
#    upward call or reference, public or internal), and
#  - an undefined smart__ symbol (internal) defined in a layer outside the
#    user's allowed set: itself and the layers it may use.
# A symbol a member of the same archive defines, or none of the archives
# (libc, libsodium, ...), is fine.  A dependency written DEP@HEADER allows
# only the smart__ symbols that HEADER declares (msg uses the runtime
# through runtime/service.h alone).
#
# usage: layer-check.sh NM LAYER=ARCHIVE=DEP[@HEADER],... ...   (bottom up)
# e.g.   layer-check.sh nm util=libsmart_util.a= wire=libsmart_wire.a=util
# Prints one line per violation and exits 1 if there is any; else prints
# what it checked and exits 0.
set -euo pipefail
nm=$1
shift
[ $# -gt 0 ] || { echo "usage: $0 NM LAYER=ARCHIVE=DEPS..." >&2; exit 2; }

declare -A rank allowed def only
names=()
i=0
for spec in "$@"; do
	IFS== read -r name ar deps <<<"$spec"
	[ -f "$ar" ] || { echo "layer-check: no archive $ar" >&2; exit 2; }
	names+=("$name")
	rank[$name]=$i
	allowed[$name]=" $name "
	for dep in ${deps//,/ }; do
		if [[ $dep == *@* ]]; then	# only what the header declares
			h=${dep#*@}
			dep=${dep%%@*}
			[ -f "$h" ] || { echo "layer-check: no header $h" >&2; exit 2; }
			only[$name:$dep]=" $(grep -o 'smart__[a-z0-9_]*[[:space:]]*(' "$h" |
				tr -d '( \t' | sort -u | tr '\n' ' ') "
		fi
		allowed[$name]+="$dep "
	done
	archive[$i]=$ar
	i=$((i + 1))
done

# Every global symbol each layer defines.
for name in "${names[@]}"; do
	ar=${archive[${rank[$name]}]}
	while read -r sym; do
		if [ -n "${def[$sym]:-}" ] && [ "${def[$sym]}" != "$name" ]; then
			echo "layer-check: $sym defined by both ${def[$sym]} and $name"
			bad=1
		fi
		def[$sym]=$name
	done < <("$nm" -g --defined-only "$ar" 2>/dev/null |
		 awk 'NF == 3 && $2 ~ /[A-TV-Z]/ { print $3 }' | sort -u)
done

bad=${bad:-0}
nundef=0
for name in "${names[@]}"; do
	r=${rank[$name]}
	while read -r sym; do
		owner=${def[$sym]:-}
		[ -z "$owner" ] && continue
		nundef=$((nundef + 1))
		[ "$owner" = "$name" ] && continue
		if [ "${rank[$owner]}" -gt "$r" ]; then
			echo "layer-check: $name uses $sym of $owner, a layer above it"
			bad=1
		elif [[ $sym == smart__* ]] &&
		     [[ ${allowed[$name]} != *" $owner "* ]]; then
			echo "layer-check: $name uses internal $sym of $owner," \
			     "not one of its layers (${allowed[$name]# })"
			bad=1
		elif [[ $sym == smart__* ]] && [ -n "${only[$name:$owner]:-}" ] &&
		     [[ ${only[$name:$owner]} != *" $sym "* ]]; then
			echo "layer-check: $name uses internal $sym of $owner," \
			     "not declared by the header it may use"
			bad=1
		fi
	done < <("$nm" -u "${archive[$r]}" 2>/dev/null |
		 awk 'NF == 2 && $1 == "U" { print $2 }' | sort -u)
done
if [ "$bad" != 0 ]; then
	echo "layer-check: FAILED"
	exit 1
fi
echo "layer-check: ${#names[@]} layers (${names[*]}), $nundef references" \
     "between library objects, none upward or outside a layer's set"
