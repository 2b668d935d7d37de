#!/usr/bin/env bash
# `make lambda-trees` (in `make test`): each Lambda links only what it runs.
# The ingress, action (and sweep), and dlq-triage functions hold none of the
# operator's services (hookgate-operator: decisions, reads, the ops API's
# client) and no console page (maud); the ops function holds the operator's
# services but no page. Each tree is resolved as `sam build` builds the
# function: in its crate's folder (its CodeUri, which scripts/check_infra.py
# holds), so its package alone (cargo tree -p), and no other member's
# features (the CLI's, the test crates') reach it.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "lambda-trees: $*" >&2; exit 1; }

# The crates of `$1`'s normal tree among `$2` (a regex of names).
holds() {
  cargo tree -p "$1" -e normal --prefix none | grep -E "^($2) v" | cut -d' ' -f1 | sort -u || true
}

for function in hookgate-ingress hookgate-action hookgate-dlq-triage; do
  found=$(holds "$function" 'hookgate-operator|hookgate-cli|maud|axum')
  [ -z "$found" ] || fail "$function links $(tr '\n' ' ' <<<"$found")(the operator's code or pages)"
  echo "lambda-trees: $function: no operator service, console page or HTTP server"
done
found=$(holds hookgate-ops 'hookgate-cli|maud')
[ -z "$found" ] || fail "hookgate-ops links $(tr '\n' ' ' <<<"$found")(the console's)"
echo "lambda-trees: hookgate-ops: the operator's services, no console page"
# The check can fail: the CLI, which serves the console, is caught.
[ -n "$(holds hookgate-cli 'hookgate-operator|maud')" ] || fail "the check found nothing in hookgate-cli: it is broken"

# No shipped binary carries the test hooks: the `test-support` feature of the
# core, the adapters and the operator (thread taps of EMF lines, the ops
# client's pause, the secrets' failure backoff, the pages' fixed zone) is
# enabled by the test crates only.
hooks() {
  cargo tree -p "$1" -e features,normal --prefix none | grep -E '^hookgate-(core|adapters|operator) feature "test-support"' | sort -u || true
}
for binary in hookgate-ingress hookgate-action hookgate-dlq-triage hookgate-ops hookgate-cli; do
  found=$(hooks "$binary")
  [ -z "$found" ] || fail "$binary enables $(tr '\n' ' ' <<<"$found")(test hooks)"
done
echo "lambda-trees: no Lambda and not the CLI carries the test hooks (test-support)"
# The check can fail: the integration tests, which use the hooks, are caught.
[ -n "$(hooks hookgate-tests)" ] || fail "the test-support check found nothing in hookgate-tests: it is broken"
