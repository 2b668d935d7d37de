#!/usr/bin/env bash
# `make local`: the AWS emulator, the resources of infra/template.yaml, the
# simulated CRM and `hookgate-dev local`, all on 127.0.0.1. Ctrl-C stops them all.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=.venv/bin/python
EMULATOR_PORT=${HOOKGATE_EMULATOR_PORT:-4566}
CRM_PORT=${HOOKGATE_CRM_PORT:-8788}
PORT=${HOOKGATE_PORT:-8787}
mkdir -p .local
# config/local.toml's destinations, pointed at this run's simulated CRM.
sed "s#http://127.0.0.1:8788#http://127.0.0.1:$CRM_PORT#" config/local.toml > .local/local.toml

"$PY" tests/emulator/server.py --port "$EMULATOR_PORT" --no-stdin-watch > .local/emulator.log 2>&1 &
EMULATOR=$!
target/debug/hookgate-dev sim-crm --port "$CRM_PORT" > .local/sim-crm.log 2>&1 &
CRM=$!
trap 'kill "$EMULATOR" "$CRM" 2>/dev/null || true' EXIT

for _ in $(seq 50); do
  grep -q listening .local/emulator.log 2>/dev/null && break
  sleep 0.2
done

export AWS_ENDPOINT_URL="http://127.0.0.1:$EMULATOR_PORT" AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
# Seconds, not minutes: an outage reaches the DLQ quickly.
# config/local.toml maps Amazon Connect's contact events: the stack has the rule.
# Registered in the emulator's CloudFormation as hookgate-local, its
# WebhookBaseUrl output this run's local runner (docs/local.md).
"$PY" scripts/provision.py --endpoint "$AWS_ENDPOINT_URL" \
  --stack-name hookgate-local --webhook-url "http://127.0.0.1:$PORT" \
  --param MaxReceiveCount=3 --param ActionQueueVisibilitySeconds=3 \
  --param ActionTimeoutSeconds=3 --param EventSource=aws.connect \
  --config .local/local.toml > .local/stack.env
# KEY=value lines, taken verbatim: `source` would strip the quotes out of
# HOOKGATE_LOCAL_FUNCTIONS's JSON.
while IFS= read -r line; do [[ -n $line ]] && export "$line"; done < .local/stack.env
set -a
HOOKGATE_CONFIG=.local/local.toml
# The documented local test secrets (CONTRIBUTING.md, "Test secrets"); never real ones.
HOOKGATE_SECRET_WS42_RETELL=key_local_ws42_retell
HOOKGATE_SECRET_WS42_STRIPE=whsec_local_ws42_stripe
HOOKGATE_SECRET_WS42_SVIX=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
set +a

echo "emulator: $AWS_ENDPOINT_URL   stack: hookgate-local   simulated CRM: http://127.0.0.1:$CRM_PORT/_sim/tasks"
echo "operator console: run make console in another terminal, then open the login link it prints"
target/debug/hookgate-dev local --port "$PORT"
