#!/usr/bin/env bash
# `make deploy-check` (in `make test`): make deploy's refusals and its memory,
# tested with CHECK_ONLY=1 (nothing is built or deployed; no AWS call). Each
# case runs scripts/deploy.sh with a few variables and asserts its exit code
# and a piece of its output. Values are saved under target/deploy-check, never
# in your .deploy/.
set -uo pipefail
cd "$(dirname "$0")/.."
export DEPLOY_STATE_DIR=target/deploy-check CHECK_ONLY=1
rm -rf "$DEPLOY_STATE_DIR"
failed=0

# expect RC TEXT [VAR=value ...]: deploy.sh with the variables exits RC and says TEXT.
expect() {
  local rc=$1 text=$2 out got
  shift 2
  out=$(env "$@" scripts/deploy.sh 2>&1); got=$?
  if [ "$got" -eq "$rc" ] && grep -qF -- "$text" <<< "$out"; then
    echo "deploy-check: ok: $* -> exit $rc, \"$text\""
  else
    echo "deploy-check: FAILED: $* -> exit $got (expected $rc with \"$text\"):" >&2
    echo "$out" | sed 's/^/    /' >&2
    failed=1
  fi
}

# The config against the retry windows and what Lambda can reach.
expect 1 "the TTL must be at least 518400 s" INBOX_TTL_SECONDS=7200
# A 4-day rule MaxEventAge: past EventBridge's own limit, refused as a parameter.
expect 1 "RuleMaxEventAgeSeconds=345600: above its maximum 86400" RULE_MAX_EVENT_AGE_SECONDS=345600
expect 1 "the template sets no variable HOOKGATE_SECRET_WS42_RETELL" HOOKGATE_DEPLOY_CONFIG=config/hookgate.example.toml
expect 1 "base_url http://127.0.0.1:8788 is a loopback address" HOOKGATE_DEPLOY_CONFIG=config/hookgate.example.toml
expect 1 "documentation placeholder" HOOKGATE_DEPLOY_CONFIG=config/hookgate.example.toml
# The EventBridge rule and the config's sources agree, both ways (N3).
expect 1 "which no [[eventbridge.sources]] maps" EVENT_SOURCE=aws.connect
expect 1 "the stack has no rule" HOOKGATE_DEPLOY_CONFIG=infra/fixtures/deploy-connect.toml
expect 0 "config ok" HOOKGATE_DEPLOY_CONFIG=infra/fixtures/deploy-connect.toml EVENT_SOURCE=aws.connect \
  STACK_NAME=hg-connect AWS_REGION=eu-west-1 AWS_ACCOUNT_ID=111122223333
# A Secrets Manager ARN of another account, a KMS key of another Region (N10).
expect 1 "the functions' roles read secrets of the stack's account 444455556666 only" \
  HOOKGATE_DEPLOY_CONFIG=infra/fixtures/deploy-connect.toml EVENT_SOURCE=aws.connect \
  AWS_REGION=eu-west-1 AWS_ACCOUNT_ID=444455556666
expect 1 "a key of another Region than the stack's (eu-west-1)" AWS_REGION=eu-west-1 \
  SECRETS_KMS_KEY_ARN=arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab
# Parameter constraints, before anything is built (N7, N9, N10).
expect 1 "AlarmEmail='ops-at-example.com'" ALARM_EMAIL=ops-at-example.com
expect 1 "MaxReceiveCount=1001: above its maximum 1000" MAX_RECEIVE_COUNT=1001
expect 1 "be at most 52 characters" STACK_NAME=hookgate-production-eu-west-1-payments-and-voice-ai-x
expect 1 "ActionReservedConcurrency=2 is below ActionMaxConcurrency=5" ACTION_RESERVED_CONCURRENCY=2
# A second deploy keeps what the first was given (N7).
expect 0 "AlarmEmail=ops@example.com" STACK_NAME=hg-check ALARM_EMAIL=ops@example.com
expect 0 "AlarmEmail=ops@example.com" STACK_NAME=hg-check
expect 0 "AlarmEmail=" STACK_NAME=hg-other
if grep -q "AlarmEmail=ops@example.com" "$DEPLOY_STATE_DIR/hg-other.env"; then
  echo "deploy-check: FAILED: stack hg-other took hg-check's AlarmEmail" >&2
  failed=1
fi
# The shared default config passes.
expect 0 "config ok"
[ "$failed" = 0 ] && echo "deploy-check: ok"
exit "$failed"
