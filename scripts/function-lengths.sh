#!/usr/bin/env bash
# The longest function definitions in C++ sources, by lines from the signature to the
# closing brace (Universal Ctags' `end:` field), longest first:
#   scripts/function-lengths.sh [-n N] [-over L] [PATH...]   (default: src/, the top 20)
# Prints "LINES FILE:LINE NAME". Lambdas count toward the function that holds them (ctags'
# names of lambdas, __anon..., are left out).
set -euo pipefail
cd "$(dirname "$0")/.."
top=20
over=0
while [ $# -gt 0 ]; do
  case "$1" in
    -n) top=$2; shift 2 ;;
    -over) over=$2; top=1000000; shift 2 ;;
    *) break ;;
  esac
done
[ $# -eq 0 ] && set -- src
find "$@" \( -name '*.cpp' -o -name '*.hpp' \) -print0 |
  xargs -0 ctags --languages=C++ --kinds-C++=f --fields=+neK --output-format=u-ctags -o - 2>/dev/null |
  awk -F'\t' -v over="$over" '
    $1 !~ /^!_/ {
      line = 0; end = 0; scope = ""
      for (i = 4; i <= NF; i++) {
        if ($i ~ /^line:/) line = substr($i, 6)
        else if ($i ~ /^end:/) end = substr($i, 5)
        else if ($i ~ /^(class|struct|namespace):/) scope = $i
      }
      if (end > 0 && end - line + 1 > over && $1 !~ /^__anon/) {
        name = $1
        sub(/^(class|struct):/, "", scope)
        if (scope != "" && scope !~ /^namespace:/) name = scope "::" $1
        print end - line + 1, $2 ":" line, name
      }
    }' |
  sort -k1,1nr | head -n "$top"
