#!/bin/sh
# help2man's view of a tool (CMakeLists.txt, target docs): runs TOOL with
# the arguments help2man gives it and, for --help, lays the text out the way
# help2man reads it: "Usage:" first, the description as its own paragraph,
# and a heading "Options:" (and a blank line before every other heading such
# as "common flags:") so that each flag becomes a list item of the page.
# The text itself is the tool's, word for word.
# Usage: man-help.sh TOOL --help|--version
tool=$1
shift
[ "$1" = --help ] || exec "$tool" "$@"
"$tool" --help | awk '
NR == 1 { sub(/^usage:/, "Usage:"); print; state = 0; next }
/^[^ ]/ { print ""; print; state = 2; next }
state == 0 && /^  -/ { print ""; print "Options:"; state = 1 }
state == 0 { if (!desc++) print ""; sub(/^  /, ""); print; next }
{ print }'
