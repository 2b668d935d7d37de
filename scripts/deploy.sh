#!/usr/bin/env bash
# `make deploy`: checks the config against the stack's retry windows and
# against what the deployed functions can reach, builds with SAM +
# cargo-lambda (arm64, provided.al2023) and runs `sam deploy --guided` with
# your AWS credentials. Refuses before building when the inbox TTL is shorter
# than twice the longest re-delivery window, when a secret reference is one
# the roles cannot read (or an `env:` variable the template does not set), or
# when a destination is on loopback (`hookgate check-config --deploy`).
#
#   HOOKGATE_DEPLOY_CONFIG  the config to bundle (default config/deploy.example.toml)
#   INBOX_TTL_SECONDS, RULE_MAX_EVENT_AGE_SECONDS, ASYNC_MAX_EVENT_AGE_SECONDS
#                           stack parameters (default: the template's defaults)
#   CHECK_ONLY=1            stop after the check (`make deploy-check`, in `make test`)
#   BUILD_ONLY=1            stop after `sam build` (`make sam-build`)
set -euo pipefail
cd "$(dirname "$0")/.."

CONFIG=${HOOKGATE_DEPLOY_CONFIG:-config/deploy.example.toml}
default() { # the template's default for parameter $1
  .venv/bin/python -c 'import sys; from cfnlint.decode import cfn_yaml
print(cfn_yaml.load("infra/template.yaml")["Parameters"][sys.argv[1]]["Default"])' "$1"
}
TTL=${INBOX_TTL_SECONDS:-$(default InboxTtlSeconds)}
RULE=${RULE_MAX_EVENT_AGE_SECONDS:-$(default RuleMaxEventAgeSeconds)}
ASYNC=${ASYNC_MAX_EVENT_AGE_SECONDS:-$(default AsyncMaxEventAgeSeconds)}
# The variables the functions get, read from the transformed template
# (`make infra-transform`): an `env:` secret must be one of them.
TEMPLATE_ENV=$(.venv/bin/python -c 'import json
names = set()
for r in json.load(open("target/infra/template.json"))["Resources"].values():
    if r["Type"] == "AWS::Lambda::Function":
        names |= set(r["Properties"].get("Environment", {}).get("Variables", {}))
print(",".join(sorted(names)))')

# The same check the functions run at start, with the values the stack will
# give them; the table and queue names are the stack's, placeholders here.
if ! HOOKGATE_INBOX_TTL_SECS=$TTL HOOKGATE_EVENTBRIDGE_MAX_EVENT_AGE_SECS=$RULE \
  HOOKGATE_ASYNC_MAX_EVENT_AGE_SECS=$ASYNC HOOKGATE_INBOX_TABLE=check \
  HOOKGATE_ACTION_QUEUE_URL=https://sqs.invalid/check RUST_BACKTRACE=0 \
  HOOKGATE_ACTION_QUEUE_VISIBILITY_SECS=$(default ActionQueueVisibilitySeconds) \
  HOOKGATE_MAX_RECEIVE_COUNT=$(default MaxReceiveCount) \
  HOOKGATE_ACTION_TIMEOUT_SECS=$(default ActionTimeoutSeconds) \
  target/debug/hookgate check-config --config "$CONFIG" --deploy "$TEMPLATE_ENV"; then
  echo "make deploy: refusing to deploy $CONFIG with InboxTtlSeconds=$TTL," \
    "RuleMaxEventAgeSeconds=$RULE, AsyncMaxEventAgeSeconds=$ASYNC (see above)." >&2
  exit 1
fi
[ "${CHECK_ONLY:-}" = 1 ] && exit 0

mkdir -p config/deploy
cp "$CONFIG" config/deploy/hookgate.toml
rustup target list --installed | grep -q aarch64-unknown-linux-gnu \
  || rustup target add aarch64-unknown-linux-gnu
export SAM_CLI_TELEMETRY=0 SAM_CLI_BETA_RUST_CARGO_LAMBDA=1 PATH="$PWD/.venv-tools/bin:$PATH"
sam build --template infra/template.yaml
[ "${BUILD_ONLY:-}" = 1 ] && exit 0
sam deploy --guided --parameter-overrides \
  "InboxTtlSeconds=$TTL RuleMaxEventAgeSeconds=$RULE AsyncMaxEventAgeSeconds=$ASYNC"
