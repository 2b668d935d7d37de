#!/usr/bin/env bash
# `make invoke-fixtures` (part of `make test`): every fixture in events/ through
# `cargo lambda watch` + `cargo lambda invoke`, exactly as docs/local.md shows,
# against the local emulator with resources provisioned from the template.
# Checks each answer and the state it leaves (inbox record, triage item).
#
# Signed fixtures go stale (providers allow minutes), so they are re-signed
# with `hookgate sign --event` just before each invoke.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=.venv/bin/python
TOOLS=.venv-tools/bin
HOOKGATE=target/debug/hookgate
WORK=$(mktemp -d)
PORT=${HOOKGATE_INVOKE_PORT:-9111}
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "invoke-fixtures: FAIL: $*" >&2; exit 1; }

# The emulator, in its own process group so cleanup ends all of it.
: > "$WORK/emulator.log"
setsid "$PY" tests/emulator/server.py --port 0 --no-stdin-watch > "$WORK/emulator.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do grep -q listening "$WORK/emulator.log" && break; sleep 0.1; done
ENDPOINT="http://$(sed -n 's/^listening //p' "$WORK/emulator.log")"

export AWS_ENDPOINT_URL="$ENDPOINT" AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
# config/fixtures.toml maps Amazon Connect's contact events: the rule too.
"$PY" scripts/provision.py --endpoint "$ENDPOINT" --prefix fixtures \
  --param EventSource=aws.connect > "$WORK/stack.env"
# KEY=value lines, taken verbatim: `source` would strip the quotes out of
# HOOKGATE_LOCAL_FUNCTIONS's JSON.
while IFS= read -r line; do [[ -n $line ]] && export "$line"; done < "$WORK/stack.env"
# The provider fixtures (tests/fixtures/providers/deliveries) as API Gateway
# events, with their bindings added to ws-1 and their keys in the environment.
"$PY" scripts/provider_events.py "$WORK" > "$WORK/providers.tsv"
cat config/fixtures.toml "$WORK/providers.toml" > "$WORK/fixtures.toml"
set -a
# shellcheck disable=SC1091
. "$WORK/providers.env"
HOOKGATE_CONFIG=$WORK/fixtures.toml
# The documented test secrets (CONTRIBUTING.md, "Test secrets").
HOOKGATE_SECRET_WS1_RETELL=key_test_ws1_retell
HOOKGATE_SECRET_WS1_STRIPE=whsec_test_ws1_stripe
set +a

PATH="$PWD/$TOOLS:$PATH"
setsid cargo lambda watch --invoke-address 127.0.0.1 --invoke-port "$PORT" > "$WORK/watch.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
  (echo > "/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  sleep 0.2
done

invoke() { # function, data file → the function's answer on stdout
  cargo lambda invoke "$1" --invoke-address 127.0.0.1 --invoke-port "$PORT" \
    --data-file "$2" --output-format json 2> "$WORK/invoke.err" \
    || { cat "$WORK/invoke.err" "$WORK/watch.log" >&2; fail "cargo lambda invoke $1 --data-file $2"; }
}
field() { "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1], {"d": d, "json": json}))' "$1"; }
expect() { # what, got, want
  [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
  echo "ok  $1"
}

# Webhooks, v2 and v1, re-signed now.
"$HOOKGATE" sign --provider retell --secret env:HOOKGATE_SECRET_WS1_RETELL \
  --event events/apigw-v2-retell-call-ended.json > "$WORK/v2.json"
out=$(invoke ingress "$WORK/v2.json")
echo "    cargo lambda invoke ingress answered: $(field 'json.dumps(d, separators=(",", ":"))' <<< "$out")"
expect "ingress, API Gateway v2 retell call_ended: status" "$(field 'd["statusCode"]' <<< "$out")" 202
expect "ingress, API Gateway v2: verdict" "$(field 'json.loads(d["body"])["verdict"]' <<< "$out")" new

"$HOOKGATE" sign --provider stripe --secret env:HOOKGATE_SECRET_WS1_STRIPE \
  --event events/apigw-v1-stripe-payment-succeeded.json > "$WORK/v1.json"
out=$(invoke ingress "$WORK/v1.json")
expect "ingress, API Gateway v1 stripe payment: status" "$(field 'd["statusCode"]' <<< "$out")" 202

out=$(invoke ingress events/apigw-v2-retell-invalid-signature.json)
expect "ingress, invalid signature: status" "$(field 'd["statusCode"]' <<< "$out")" 401
"$HOOKGATE" inbox show ws-1 retell call_ended:call_fixture_forged --config config/fixtures.toml > /dev/null \
  && fail "the invalid signature was stored" || expect "ingress, invalid signature: nothing stored (inbox show exits 3)" "$?" 3

# Each provider fixture, re-signed now with its key: an event is stored (202
# new) and refused with a byte of its body changed (401), a handshake
# answered (200 and its provider's answer).
while IFS=$'\t' read -r file provider var id status want; do
  idarg=(); [ "$id" != - ] && idarg=(--id "$id")
  "$HOOKGATE" sign --provider "$provider" --secret "env:$var" --config "$HOOKGATE_CONFIG" \
    --workspace ws-1 "${idarg[@]}" --event "$file" > "$file.signed"
  out=$(invoke ingress "$file.signed")
  expect "ingress, $provider fixture ($(basename "$file")): status" "$(field 'd["statusCode"]' <<< "$out")" "$status"
  if [ "$status" = 202 ]; then
    expect "ingress, $provider fixture: verdict" "$(field 'json.loads(d["body"])["verdict"]' <<< "$out")" "$want"
    # The same request with one byte of its body changed: refused.
    "$PY" -c 'import json,sys; e=json.load(open(sys.argv[1])); b=bytearray(e["body"].encode()); b[-2]^=1; e["body"]=b.decode(); json.dump(e,open(sys.argv[2],"w"))' \
      "$file.signed" "$file.changed"
    out=$(invoke ingress "$file.changed")
    expect "ingress, $provider fixture changed: status" "$(field 'd["statusCode"]' <<< "$out")" 401
  else
    expect "ingress, $provider handshake: answer" \
      "$(field 'json.dumps(json.loads(d["body"]), separators=(",", ":"), sort_keys=True)' <<< "$out")" "$want"
  fi
done < "$WORK/providers.tsv"

# The EventBridge rule target path.
invoke ingress events/eventbridge-connect-contact-event.json > /dev/null
record=$("$HOOKGATE" inbox show ws-1 eventbridge 5b3a2f1e-8c4d-4e6f-9a0b-1c2d3e4f5a6b --config config/fixtures.toml --json)
expect "ingress, EventBridge Connect event: stored" "$(field 'd["status"]' <<< "$record")" RECEIVED

# The action worker's SQS batch, naming the v2 webhook's inbox record.
out=$(invoke action events/sqs-action-batch.json)
echo "    cargo lambda invoke action answered: $(field 'json.dumps(d, separators=(",", ":"))' <<< "$out")"
expect "action, SQS batch: no failed item" "$(field 'len(d["batchItemFailures"])' <<< "$out")" 0
record=$("$HOOKGATE" inbox show ws-1 retell call_ended:call_fixture_v2 --config config/fixtures.toml --json)
expect "action, SQS batch: inbox record settled (no rule for call_ended)" "$(field 'd["status"]' <<< "$record")" IGNORED

# The sweep's schedule event.
invoke sweep events/schedule-sweep.json > /dev/null
echo "ok  sweep, schedule event"

# A dead letter → a held triage item.
out=$(invoke dlq-triage events/sqs-dlq-batch.json)
expect "dlq-triage, DLQ batch: no failed item" "$(field 'len(d["batchItemFailures"])' <<< "$out")" 0
held=$("$HOOKGATE" triage list --config config/fixtures.toml --json)
expect "dlq-triage, DLQ batch: one item held" "$(field 'len(d)' <<< "$held")" 1
item=$(field 'd[0]["id"]' <<< "$held")

# The ops route approves it, with the caller's IAM identity recorded.
sed "s/ITEM_ID/$item/g" events/apigw-v2-ops-approve.json > "$WORK/approve.json"
out=$(invoke ops "$WORK/approve.json")
expect "ops, approve route: status" "$(field 'd["statusCode"]' <<< "$out")" 200
shown=$("$HOOKGATE" triage show "$item" --config config/fixtures.toml --json)
expect "ops, approve route: decided by the caller" "$(field 'd["decided_by"]' <<< "$shown")" \
  "arn:aws:sts::123456789012:assumed-role/hookgate-operator/oncall (userId AROAEXAMPLE:oncall, accessKey ASIAEXAMPLE, sourceIp 203.0.113.30)"
echo "invoke-fixtures: every fixture invoked through cargo lambda"
