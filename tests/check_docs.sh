#!/usr/bin/env bash
# The docs test: pages speak to users, so no page may refer to the project's tracker or
# its working sessions ("issue 11", "the issue's reproducers", "session 3", "wave 1",
# "branch s6-httpperf") or to paths on the developers' machines (/work/...). Checks every
# Markdown file under docs/, README.md, and the comments of examples/ (YAML, Python, shell,
# Markdown); prints each offending line and fails when there is one.
#   tests/check_docs.sh [ROOT]     (ROOT: the repository, default: this script's parent)
#   tests/check_docs.sh --self-test  (each kind of reference, planted in a scratch tree,
#                                     must fail the check; a clean page must pass)
set -uo pipefail

if [[ "${1:-}" == "--self-test" ]]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  mkdir -p "$scratch/docs/results" "$scratch/examples/x"
  clean='The server issues one edit per change; per-session budgets; see docs/serve.md.'
  echo "$clean" >"$scratch/docs/page.md"
  echo "# README" >"$scratch/README.md"
  if ! "$0" "$scratch" >/dev/null; then
    echo "self-test: a clean page failed the check" >&2
    exit 1
  fi
  planted=(
    "docs/page.md|Before issue 11 it dropped late."
    "docs/results/r.md|(issue #16, item 7)"
    "README.md|on the issue's lv reproducer"
    "docs/page.md|as the issue describes"
    "docs/page.md|measured in session 3"
    "docs/page.md|Re-measured at the end of the session."
    "docs/page.md|wave 1 of the work"
    "docs/page.md|after (this branch):"
    "docs/page.md|git archive s6-httpperf bench (branch s6-httpperf)"
    "examples/x/run.yaml|# digest in /work/shared/papers/000.digest.md"
  )
  for entry in "${planted[@]}"; do
    file="$scratch/${entry%%|*}"
    cp "$file" "$file.orig" 2>/dev/null || : >"$file.orig"
    echo "${entry#*|}" >>"$file"
    if "$0" "$scratch" >/dev/null 2>&1; then
      echo "self-test: not caught: '${entry#*|}' in ${entry%%|*}" >&2
      exit 1
    fi
    mv "$file.orig" "$file"
  done
  echo "check_docs self-test: ${#planted[@]} planted references caught, the clean page passes"
  exit 0
fi

root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root" || exit 2

# Case-insensitive extended regular expressions, one per kind of reference.
patterns=(
  '(^|[^a-z])issues? ?#?-?[0-9]+'           # issue 11, issue #11, issue-16, issues 3
  "(^|[^a-z])issue('s|s')"                  # the issue's reproducers
  '(^|[^a-z])(the|this|that|same|a) issue([^a-z]|$)'  # as the issue describes
  '(^|[^a-z])sessions? [0-9]+'              # session 7
  '(^|[^a-z])(the|this|that|same) session([^a-z]|$)'  # at the end of the session
  '(^|[^a-z])wave [0-9]+'                   # wave 1
  '(^|[^a-z])(this|that|the) branch([^a-z]|$)'  # measured on this branch
  'branch [`"]?[a-z]+[0-9]+-[a-z0-9-]+'     # branch s6-httpperf, branch issue16-specs
  '/work/(shared|main|wt-|notes)'           # paths on the developers' machines
)

files=()
[[ -f README.md ]] && files+=(README.md)
while IFS= read -r -d '' f; do files+=("$f"); done < <(
  find docs examples -type f \( -name '*.md' -o -name '*.yaml' -o -name '*.yml' \
    -o -name '*.py' -o -name '*.sh' \) -print0 2>/dev/null | sort -z)
if [[ ${#files[@]} -eq 0 ]]; then
  echo "check_docs: no docs found under $root" >&2
  exit 2
fi

found=0
for p in "${patterns[@]}"; do
  if hits=$(grep -nHiE -- "$p" "${files[@]}"); then
    found=1
    echo "tracker or machine references (pattern: $p):"
    echo "$hits" | sed 's/^/  /'
  fi
done
if [[ $found -ne 0 ]]; then
  echo "check_docs: docs must speak to users: say what is true now, and why, without" \
       "pointing at the tracker, a session or a branch (see tests/check_docs.sh)" >&2
  exit 1
fi
echo "check_docs: ${#files[@]} files, no tracker or machine references"
