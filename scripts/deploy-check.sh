#!/usr/bin/env bash
# `make deploy-check` (in `make test`): make deploy's refusals and how it
# resolves the stack's parameters, tested with CHECK_ONLY=1 (nothing is built,
# deployed or saved; no AWS call). Each case runs scripts/deploy.sh with a few
# variables and asserts its exit code and a piece of its output; the saved
# values it reads are under target/deploy-check, never your .deploy/.
set -uo pipefail
cd "$(dirname "$0")/.."
# Hermetic: none of the caller's deploy settings leak in (every template
# parameter's variable, the stack, the config, where AWS is).
for name in $(.venv/bin/python -c 'import json, sys
sys.path.insert(0, "scripts")
from deploy_params import env_name
print(" ".join(env_name(p) for p in json.load(open("target/infra/template.json"))["Parameters"]))'); do
  unset "$name"
done
unset STACK_NAME GUIDED BUILD_ONLY AWS_REGION AWS_DEFAULT_REGION AWS_ACCOUNT_ID AWS_PROFILE DEPLOY_OTHER_STACKS \
  DEPLOYER_POLICIES
for name in "${!HOOKGATE_@}"; do unset "$name"; done
export DEPLOY_STATE_DIR=target/deploy-check CHECK_ONLY=1
rm -rf "$DEPLOY_STATE_DIR"
failed=0

# How the values of four places are resolved (the deployed stack's included).
.venv/bin/python scripts/test_deploy_params.py || failed=1

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
# A short InboxTtlSeconds is the least a record lives: each provider's
# records still live twice its re-delivery window (Stripe's three days).
expect 0 "at least 7200 s (retell 7200 s, stripe 518400 s)" INBOX_TTL_SECONDS=7200 \
  AWS_REGION=eu-west-1 AWS_ACCOUNT_ID=111122223333
# A 4-day rule MaxEventAge: past EventBridge's own limit, refused as a parameter.
expect 1 "RuleMaxEventAgeSeconds=345600: above its maximum 86400" RULE_MAX_EVENT_AGE_SECONDS=345600
# The example's payment makes three actions of one event: they do not fit
# the template's default 30 s, and its comment says what to deploy with.
expect 1 "raise HOOKGATE_ACTION_TIMEOUT_SECS (ActionTimeoutSeconds)" HOOKGATE_DEPLOY_CONFIG=config/hookgate.example.toml
EXAMPLE="HOOKGATE_DEPLOY_CONFIG=config/hookgate.example.toml ACTION_TIMEOUT_SECONDS=75 ACTION_QUEUE_VISIBILITY_SECONDS=450"
# shellcheck disable=SC2086
expect 1 "the template sets no variable HOOKGATE_SECRET_WS42_RETELL" $EXAMPLE
# shellcheck disable=SC2086
expect 1 "base_url http://127.0.0.1:8788 is a loopback address" $EXAMPLE
# shellcheck disable=SC2086
expect 1 "documentation placeholder" $EXAMPLE
# The EventBridge rule and the config's sources agree, both ways (N3).
expect 1 "which no [[eventbridge.sources]] maps" EVENT_SOURCE=aws.connect
expect 1 "the stack has no rule" HOOKGATE_DEPLOY_CONFIG=infra/fixtures/deploy-connect.toml
expect 0 "config ok" HOOKGATE_DEPLOY_CONFIG=infra/fixtures/deploy-connect.toml EVENT_SOURCE=aws.connect \
  STACK_NAME=hg-connect AWS_REGION=eu-west-1 AWS_ACCOUNT_ID=111122223333
expect 1 'detail-type "Amazon Connect Contact Event" never arrives' \
  HOOKGATE_DEPLOY_CONFIG=infra/fixtures/deploy-connect.toml EVENT_SOURCE=aws.connect \
  EVENT_DETAIL_TYPE="Amazon Connect Agent Event"
# Secrets the roles cannot read: another account or Region (N10), another prefix.
expect 1 "the functions' roles read secrets of the stack's account 444455556666 only" \
  HOOKGATE_DEPLOY_CONFIG=infra/fixtures/deploy-connect.toml EVENT_SOURCE=aws.connect \
  STACK_NAME=hg-connect AWS_REGION=eu-west-1 AWS_ACCOUNT_ID=444455556666
expect 1 "the secret is in Region eu-west-1; the functions' roles read secrets of the stack's Region us-east-1 only" \
  HOOKGATE_DEPLOY_CONFIG=infra/fixtures/deploy-connect.toml EVENT_SOURCE=aws.connect \
  STACK_NAME=hg-connect AWS_REGION=us-east-1 AWS_ACCOUNT_ID=111122223333
# Secrets are the stack's own (/hookgate/<stack>/, hookgate/<stack>/): another
# stack's, or the prefix every stack shared before, are refused with the name
# to move them to.
expect 1 "the functions' roles read SSM parameters under /hookgate/hookgate/ only" \
  HOOKGATE_DEPLOY_CONFIG=infra/fixtures/deploy-unreachable.toml
expect 1 "move it to secretsmanager:hookgate/hookgate/crm#token" \
  HOOKGATE_DEPLOY_CONFIG=infra/fixtures/deploy-unreachable.toml
expect 1 "under /hookgate/hg-other/ only (this stack's)" STACK_NAME=hg-other
# An event's actions that cannot fit the action function's timeout.
expect 1 "the action function's timeout of 1000 ms cannot fit" ACTION_TIMEOUT_SECONDS=1 ACTION_QUEUE_VISIBILITY_SECONDS=6
expect 1 "a key of another Region than the stack's (eu-west-1)" AWS_REGION=eu-west-1 \
  SECRETS_KMS_KEY_ARN=arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab
# Parameter constraints, before anything is built (N7, N9, N10).
expect 1 "AlarmEmail='ops-at-example.com'" ALARM_EMAIL=ops-at-example.com
expect 1 "MaxReceiveCount=1001: above its maximum 1000" MAX_RECEIVE_COUNT=1001
expect 1 "LogRetentionDays='2': not one of" LOG_RETENTION_DAYS=2
# 33 characters: CloudFormation would shorten SweepSchedulerRole's generated name.
expect 1 "be at most 32 characters" STACK_NAME=hookgate-production-eu-west-1-pay
expect 1 "ActionReservedConcurrency=2 is below ActionMaxConcurrency=5" ACTION_RESERVED_CONCURRENCY=2
# What AWS refuses mid-deploy, refused first (issue 49, item 7): the account's
# API quota (10,000 per second, burst 5,000), and fractions where AWS takes
# an integer (a fractional reservation is still compared with the concurrency).
expect 1 "WebhookThrottleRate=20000: above its maximum 10000" WEBHOOK_THROTTLE_RATE=20000
expect 1 "WebhookThrottleBurst=10000: above its maximum 5000" WEBHOOK_THROTTLE_BURST=10000
expect 1 "WebhookThrottleBurst=2000.5: not a whole number" WEBHOOK_THROTTLE_BURST=2000.5
expect 1 "ActionMaxConcurrency=5.5: not a whole number" ACTION_MAX_CONCURRENCY=5.5
expect 1 "ActionReservedConcurrency=4.5: not a whole number" ACTION_RESERVED_CONCURRENCY=4.5
expect 1 "ActionReservedConcurrency=4.5 is below ActionMaxConcurrency=5" ACTION_RESERVED_CONCURRENCY=4.5
expect 0 "WebhookThrottleRate=2.5" WEBHOOK_THROTTLE_RATE=2.5
# Stacks that cannot reach each other (issue 49, item 5): each scope of the
# deployer's policies names its resource's own form, so neither of hookgate
# and hookgate-staging takes the other's resources (scripts/check_deployer.py
# proves it for every scope and every name the template gives). A copy whose
# Tables scope is `${StackName}-*`, as before, is warned about, naming it.
mkdir -p "$DEPLOY_STATE_DIR"
.venv/bin/python - "$DEPLOY_STATE_DIR/wide-policy.json" <<'PY'
import json, sys
sys.path.insert(0, "scripts")
import check_deployer
name, policy = check_deployer.widened([("wide", check_deployer.load_json(check_deployer.POLICIES[0]))],
                                      "Tables")[0]
json.dump(policy, open(sys.argv[1], "w"), indent=2)
PY
expect 0 "scope Tables arn:\${Partition}:dynamodb:\${Region}:\${Account}:table/\${StackName}-* of stack hookgate also takes stack hookgate-staging's" \
  DEPLOY_OTHER_STACKS=hookgate-staging \
  DEPLOYER_POLICIES=$DEPLOY_STATE_DIR/wide-policy.json,docs/deployer-policy-2.json,docs/deployer-policy-3.json,docs/deployer-policy-4.json,docs/deployer-policy-5.json
# The example's secrets, moved under hookgate-staging's name.
sed "s#hookgate/hookgate/#hookgate/hookgate-staging/#" config/deploy.example.toml \
  > "$DEPLOY_STATE_DIR/hookgate-staging.toml"
for pair in "hookgate hookgate-staging" "hookgate-staging hookgate"; do
  set -- $pair
  config=config/deploy.example.toml
  [ "$1" = hookgate ] || config=$DEPLOY_STATE_DIR/$1.toml
  out=$(env STACK_NAME=$1 DEPLOY_OTHER_STACKS=$2 HOOKGATE_DEPLOY_CONFIG=$config scripts/deploy.sh 2>&1); rc=$?
  if [ "$rc" -ne 0 ] || grep -q "also takes stack" <<< "$out"; then
    echo "deploy-check: FAILED: STACK_NAME=$1 DEPLOY_OTHER_STACKS=$2 -> exit $rc, or a scope takes the other's:" >&2
    echo "$out" | sed 's/^/    /' >&2
    failed=1
  else
    echo "deploy-check: ok: STACK_NAME=$1 DEPLOY_OTHER_STACKS=$2 -> no scope takes the other's"
  fi
done
# A custom domain needs its certificate, of the stack's Region (issue 49, item 1).
expect 1 "set both or neither" CUSTOM_DOMAIN_NAME=hooks.example.com
expect 1 "a certificate of another Region than the stack's (eu-west-1)" AWS_REGION=eu-west-1 \
  CUSTOM_DOMAIN_NAME=hooks.example.com \
  CUSTOM_DOMAIN_CERTIFICATE_ARN=arn:aws:acm:us-east-1:111122223333:certificate/1234abcd-12ab-34cd-56ef-1234567890ab
expect 1 "CustomDomainName='Hooks.Example.com'" CUSTOM_DOMAIN_NAME=Hooks.Example.com \
  CUSTOM_DOMAIN_CERTIFICATE_ARN=arn:aws:acm:eu-west-1:111122223333:certificate/1234abcd-12ab-34cd-56ef-1234567890ab
expect 0 "CustomDomainName=hooks.example.com" AWS_REGION=eu-west-1 AWS_ACCOUNT_ID=111122223333 \
  CUSTOM_DOMAIN_NAME=hooks.example.com \
  CUSTOM_DOMAIN_CERTIFICATE_ARN=arn:aws:acm:eu-west-1:111122223333:certificate/1234abcd-12ab-34cd-56ef-1234567890ab
# A second deploy keeps what the first deployed (N7): the values saved after a
# deploy (as `deploy_params.py --save-deployed` writes them) are read back,
# for that stack only; a variable still wins. (With AWS, the deployed
# stack's own values come first: scripts/test_deploy_params.py.)
mkdir -p "$DEPLOY_STATE_DIR"
printf '# saved after a deploy\nAlarmEmail=ops@example.com\n' > "$DEPLOY_STATE_DIR/hg-check.env"
# The example's secrets, moved under each stack's name.
for stack in hg-check hg-other; do
  sed "s#hookgate/hookgate/#hookgate/$stack/#" config/deploy.example.toml > "$DEPLOY_STATE_DIR/$stack.toml"
done
expect 0 "AlarmEmail=ops@example.com" STACK_NAME=hg-check HOOKGATE_DEPLOY_CONFIG=$DEPLOY_STATE_DIR/hg-check.toml
expect 0 "AlarmEmail=oncall@example.com" STACK_NAME=hg-check ALARM_EMAIL=oncall@example.com \
  HOOKGATE_DEPLOY_CONFIG=$DEPLOY_STATE_DIR/hg-check.toml
out=$(env STACK_NAME=hg-other HOOKGATE_DEPLOY_CONFIG=$DEPLOY_STATE_DIR/hg-other.toml scripts/deploy.sh 2>&1)
if ! grep -qx "  AlarmEmail=" <<< "$out"; then
  echo "deploy-check: FAILED: stack hg-other did not start from the default AlarmEmail: $out" >&2
  failed=1
fi
if grep -q "AlarmEmail=oncall" "$DEPLOY_STATE_DIR/hg-check.env" || [ -e "$DEPLOY_STATE_DIR/hg-other.env" ]; then
  echo "deploy-check: FAILED: a check without a deploy saved parameters" >&2
  failed=1
fi
# The shared default config passes.
expect 0 "config ok"
[ "$failed" = 0 ] && echo "deploy-check: ok"
exit "$failed"
