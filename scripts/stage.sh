#!/usr/bin/env bash
# `make test`'s stages, each timed by wall clock:
#   scripts/stage.sh --start        forgets earlier times (target/stage-times.tsv)
#   scripts/stage.sh NAME CMD...    runs CMD, then prints "stage NAME: N s"
#                                   and records it, failed or not
#   scripts/stage.sh --report       every stage's time and the total
# A failed stage prints the report so far before it fails.
set -uo pipefail
cd "$(dirname "$0")/.."
times=target/stage-times.tsv

report() {
  awk -F'\t' '{ printf "  %-18s %6d s  %s\n", $1, $2, $3; total += $2 }
    END { printf "  %-18s %6d s (%d min %d s)\n", "total", total, total / 60, total % 60 }' "$times"
}

case "${1:-}" in
  --start) mkdir -p target && : > "$times"; exit 0 ;;
  --report) echo "make test: stage times"; report; exit 0 ;;
  "") echo "usage: scripts/stage.sh NAME CMD... | --start | --report" >&2; exit 2 ;;
esac
name=$1
shift
echo "stage $name: $*"
start=$(date +%s)
"$@"
rc=$?
took=$(( $(date +%s) - start ))
mkdir -p target
printf '%s\t%s\t%s\n' "$name" "$took" "$([ "$rc" = 0 ] && echo ok || echo "FAILED (exit $rc)")" >> "$times"
echo "stage $name: $took s$([ "$rc" = 0 ] || echo ", FAILED (exit $rc)")"
if [ "$rc" != 0 ]; then
  echo "make test: stage times so far"
  report
fi
exit "$rc"
