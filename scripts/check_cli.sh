#!/usr/bin/env bash
# `make cli-check` (part of `make test`): the operator's `hookgate` is a tool
# of its own. Its dependency tree holds no function crate, no dev tooling
# (hookgate-dev, hookgate-testkit) and no Lambda runtime; its one server is
# `hookgate console`'s (axum on hyper's HTTP/1, listening on 127.0.0.1), and
# the binary runs from a directory outside the checkout, knowing nothing of
# it. (reqwest stays: the adapters' CRM client brings it; the simulated CRM's
# server side is not there.)
#
# `cargo install --path crates/cli` resolves the CLI's features alone, not unified
# with the workspace's: `cargo check -p hookgate-cli --locked` proves that
# build compiles (metadata only: the second full build `cargo install` made
# cost 4 minutes of make test), and the binary run outside is the workspace's
# own debug build, which `make test` has built by then.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "cli-check: $*" >&2; exit 1; }

tree=$(cargo tree -p hookgate-cli -e normal --prefix none)
for crate in hookgate-ingress hookgate-action hookgate-dlq-triage hookgate-ops hookgate-dev hookgate-testkit lambda_http lambda_runtime; do
  if grep -q "^$crate v" <<<"$tree"; then fail "the hookgate CLI depends on $crate"; fi
done
# The console serves HTTP/1 only: no HTTP/2 server is built in.
if cargo tree -p hookgate-cli -e features -i axum --prefix none | grep -q 'axum feature "http2"'; then
  fail "the hookgate CLI builds an HTTP/2 server"
fi

cargo check --quiet --locked -p hookgate-cli
[ -x target/debug/hookgate ] || cargo build --quiet -p hookgate-cli
away=$(mktemp -d)
trap 'rm -rf "$away"' EXIT
cp target/debug/hookgate "$away/hookgate"
if grep -q -F "$PWD" "$away/hookgate"; then fail "the hookgate binary holds the checkout's path ($PWD)"; fi
printf '{"event":"call_ended","call":{"call_id":"c1"}}' > "$away/body.json"
(
  cd "$away"
  env -i PATH=/usr/bin:/bin ./hookgate --help > help.txt
  for command in sign send status logs check-config inbox actions triage stats doctor console completions man; do
    grep -q "^  $command " help.txt || fail "hookgate --help lists no $command"
  done
  for dev in local demo sim-crm; do
    if grep -q "^  $dev " help.txt; then fail "hookgate --help still lists $dev (hookgate-dev's)"; fi
  done
  env -i PATH=/usr/bin:/bin ./hookgate completions bash > hookgate.bash
  grep -q 'triage' hookgate.bash || fail "the bash completions know no triage"
  env -i PATH=/usr/bin:/bin ./hookgate man > hookgate.1
  grep -q '^\.TH hookgate 1' hookgate.1 || fail "hookgate man wrote no manual page"
  env -i PATH=/usr/bin:/bin ./hookgate man --dir pages > /dev/null
  [[ -s pages/hookgate-triage-approve.1 ]] || fail "hookgate man --dir wrote no page per command"
  # A usage error exits 2; with --json it is JSON on stderr.
  code=0; env -i PATH=/usr/bin:/bin ./hookgate --json triage list --status nope 2> usage.json || code=$?
  [[ $code == 2 ]] || fail "a usage error exited $code, not 2"
  grep -q '"code":"usage"' usage.json || fail "a --json usage error printed: $(cat usage.json)"
  env -i PATH=/usr/bin:/bin SECRET=key_test_ws1_retell ./hookgate sign --provider retell \
    --secret env:SECRET --body body.json --timestamp 1796000000 > signed.txt
  # The documented test secret signs this body at this time to exactly this
  # (Python: hmac.new(secret, body + b"1796000000000", "sha256")).
  grep -q -x 'x-retell-signature: v=1796000000000,d=0540948a4739e5c78ab3af72a9f50d75c38b1422610b3ab980084c2957cad04c' signed.txt \
    || fail "hookgate sign outside the checkout printed: $(cat signed.txt)"
)
echo "cli-check ok: no function crate, dev tooling or Lambda runtime in hookgate's tree, the console's HTTP/1 server only; it compiles alone (--locked), and copied out it runs and signs from $away"
