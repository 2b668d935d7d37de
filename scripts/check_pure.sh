#!/usr/bin/env bash
# `make check` (and so `make test`): the pure crates stay pure. hookgate-core,
# hookgate-operator (the operator's reads, decisions and pages) and
# hookgate-memory (the memory ports, the contract suites, the service tests,
# the simulator), with their dev-dependencies, compile no AWS SDK
# crate, no AWS runtime or Lambda crate and no HTTP server or client: that
# is what keeps `make check` a short loop (docs/performance.md), and the core a library the
# adapters wrap, not one that wraps them.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "check-pure: $*" >&2; exit 1; }

# The crates of `$1`'s tree this check forbids.
impure() {
  cargo tree -p "$1" -e normal,build,dev --prefix none \
    | grep -E '^(aws-[a-z0-9-]+|lambda_[a-z_]+|axum|hyper|reqwest) v' | sort -u || true
}

for package in hookgate-core hookgate-operator hookgate-memory; do
  found=$(impure "$package")
  [ -z "$found" ] || fail "$package compiles $(tr '\n' ' ' <<<"$found")"
  echo "check-pure: $package: no AWS SDK, Lambda, hyper, axum or reqwest crate"
done
# The check can fail: the emulator's crate, which speaks AWS, is caught.
[ -n "$(impure hookgate-testkit)" ] || fail "the check found nothing in hookgate-testkit: it is broken"
