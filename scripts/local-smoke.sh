#!/usr/bin/env bash
# `make local-smoke` (part of `make test`): `make local`'s script as a user
# runs it — emulator, template resources, simulated CRM, `hookgate-dev local`
# — then one signed webhook sent twice over HTTP: `new`, then `duplicate`,
# and exactly one CRM task. Stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."

export HOOKGATE_PORT=${HOOKGATE_SMOKE_PORT:-9187}
export HOOKGATE_CRM_PORT=${HOOKGATE_SMOKE_CRM_PORT:-9188}
export HOOKGATE_EMULATOR_PORT=${HOOKGATE_SMOKE_EMULATOR_PORT:-9166}
WORK=$(mktemp -d)
setsid scripts/local.sh > "$WORK/local.out" 2>&1 &
LOCAL=$!
cleanup() { kill -- "-$LOCAL" 2>/dev/null || true; wait "$LOCAL" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
fail() { echo "local-smoke: $*" >&2; cat "$WORK/local.out" >&2; exit 1; }

for _ in $(seq 120); do
  grep -q "hookgate-dev local: POST" "$WORK/local.out" && break
  kill -0 "$LOCAL" 2>/dev/null || fail "make local's script exited"
  sleep 0.5
done
grep -q "hookgate-dev local: POST" "$WORK/local.out" || fail "hookgate-dev local did not start"

printf '%s' '{"event":"call_analyzed","call":{"call_id":"c-smoke","metadata":{"workspace":"ws-42"},"call_analysis":{"call_summary":"smoke","custom_analysis_data":{"callback_requested":true,"callback_request_id":"cb-smoke"}}}}' > "$WORK/body.json"
post() {
  # The documented local test secret (CONTRIBUTING.md, "Test secrets").
  SECRET=key_local_ws42_retell target/debug/hookgate sign --provider retell --secret env:SECRET \
    --body "$WORK/body.json" --url "http://127.0.0.1:$HOOKGATE_PORT/webhooks/retell/ws-42" \
    | tail -1 > "$WORK/curl.sh"
  bash "$WORK/curl.sh"
}
tasks() { curl -sS "http://127.0.0.1:$HOOKGATE_CRM_PORT/_sim/tasks" | sed -n 's/^{"total":\([0-9]*\).*/\1/p'; }

first=$(post)
[[ $first == '{"event_key":"call_analyzed:c-smoke","verdict":"new"}' ]] || fail "first delivery answered $first"
for _ in $(seq 60); do [[ $(tasks) == 1 ]] && break; sleep 0.5; done
[[ $(tasks) == 1 ]] || fail "no CRM task after the first delivery (tasks: $(tasks))"
again=$(post)
[[ $again == '{"event_key":"call_analyzed:c-smoke","verdict":"duplicate"}' ]] || fail "the repeat answered $again"
sleep 3
[[ $(tasks) == 1 ]] || fail "the repeat made another task (tasks: $(tasks))"
echo "local-smoke ok: make local served a signed webhook: new, then duplicate, one CRM task"
