#!/usr/bin/env bash
# `make deploy`: resolves the stack's parameters (scripts/deploy_params.py:
# your variables, else the deployed stack's values, else those saved after
# this checkout's last deploy of it, else the template's defaults), checks them and
# the config against each other and against what the deployed functions can
# reach, builds with SAM + cargo-lambda (arm64, provided.al2023) and deploys
# with your AWS credentials, without prompting. Refuses before building when
# a parameter breaks its constraint (a maximum, a fraction where AWS takes an
# integer, a custom domain without its certificate) or the stack name is too
# long, when a
# secret reference is one the roles cannot read, when a destination is on
# loopback, or when the EventBridge rule and the config's sources disagree
# (`hookgate check-config --deploy`). Warns if a scope of the deployer's
# policies takes another stack's resources (none does as shipped: a copy
# widened by hand; docs/deploy.md, "Stacks that cannot reach each other").
#
#   STACK_NAME              the stack (default hookgate)
#   HOOKGATE_DEPLOY_CONFIG  the config to bundle (default config/deploy.example.toml)
#   ALARM_EMAIL, SECRETS_KMS_KEY_ARN, EVENT_SOURCE, INBOX_TTL_SECONDS, …
#                           any template parameter, named in capitals with
#                           underscores; after a deploy its parameters are
#                           saved in .deploy/<stack>.env
#   DEPLOY_STATE_DIR        where they are saved (default .deploy)
#   GUIDED=1                `sam deploy --guided`, offering the checked values
#                           (what you change at a prompt is deployed unchecked)
#   CHECK_ONLY=1            stop after the check (`make deploy-check`, in `make test`)
#   BUILD_ONLY=1            stop after `sam build` (`make sam-build`)
set -euo pipefail
cd "$(dirname "$0")/.."

CONFIG=${HOOKGATE_DEPLOY_CONFIG:-config/deploy.example.toml}
STACK=${STACK_NAME:-hookgate}
STATE=${DEPLOY_STATE_DIR:-.deploy}
# Only a deploy asks AWS (the deployed stack's values, the account, the Region).
ADOPT=--adopt
[ "${CHECK_ONLY:-}" = 1 ] || [ "${BUILD_ONLY:-}" = 1 ] && ADOPT=
RESOLVED=$(mktemp)
trap 'rm -f "$RESOLVED"' EXIT
if ! .venv/bin/python scripts/deploy_params.py --stack "$STACK" --state "$STATE" $ADOPT > "$RESOLVED"; then
  echo "make deploy: refusing to deploy stack $STACK (see above)." >&2
  exit 1
fi
declare -A P
OVERRIDES=() CHECK_PARAMS=()
while IFS= read -r line; do
  name=${line%%=*} value=${line#*=}
  P[$name]=$value
  case $name in
    @*) ;;
    *) OVERRIDES+=("$name=\"${value//\"/\\\"}\"") CHECK_PARAMS+=(--param "$name=$value") ;;
  esac
done < "$RESOLVED"
echo "make deploy: stack $STACK, parameters:"
grep -v '^@' "$RESOLVED" | sed 's/^/  /'

# The variables the functions get, read from the transformed template
# (`make infra-transform`): an `env:` secret must be one of them.
TEMPLATE_ENV=$(.venv/bin/python -c 'import json
names = set()
for r in json.load(open("target/infra/template.json"))["Resources"].values():
    if r["Type"] == "AWS::Lambda::Function":
        names |= set(r["Properties"].get("Environment", {}).get("Variables", {}))
print(",".join(sorted(names)))')

# The same check the functions run at start, with the values the stack will
# give them and no others: none of your own HOOKGATE_* variables (the
# functions get only the template's); the table and queue names are the
# stack's, placeholders here.
IGNORED_ENV=()
for name in "${!HOOKGATE_@}"; do IGNORED_ENV+=(-u "$name"); done
if ! env "${IGNORED_ENV[@]}" HOOKGATE_INBOX_TTL_SECS=${P[InboxTtlSeconds]} \
  HOOKGATE_EVENTBRIDGE_MAX_EVENT_AGE_SECS=${P[RuleMaxEventAgeSeconds]} \
  HOOKGATE_ASYNC_MAX_EVENT_AGE_SECS=${P[AsyncMaxEventAgeSeconds]} HOOKGATE_INBOX_TABLE=check \
  HOOKGATE_ACTION_QUEUE_URL=https://sqs.invalid/check RUST_BACKTRACE=0 \
  HOOKGATE_ACTION_QUEUE_VISIBILITY_SECS=${P[ActionQueueVisibilitySeconds]} \
  HOOKGATE_MAX_RECEIVE_COUNT=${P[MaxReceiveCount]} \
  HOOKGATE_ACTION_TIMEOUT_SECS=${P[ActionTimeoutSeconds]} \
  target/debug/hookgate check-config --config "$CONFIG" --deploy "$TEMPLATE_ENV" \
    --stack-name "$STACK" --account "${P[@account]}" --region "${P[@region]}" "${CHECK_PARAMS[@]}"; then
  echo "make deploy: refusing to deploy $CONFIG as stack $STACK with the parameters above." >&2
  exit 1
fi
[ "${CHECK_ONLY:-}" = 1 ] && exit 0

mkdir -p config/deploy
cp "$CONFIG" config/deploy/hookgate.toml
rustup target list --installed | grep -q aarch64-unknown-linux-gnu \
  || rustup target add aarch64-unknown-linux-gnu
export SAM_CLI_TELEMETRY=0 SAM_CLI_BETA_RUST_CARGO_LAMBDA=1 PATH="$PWD/.venv-tools/bin:$PATH"
# SAM reads a relative --config-file from the template's folder: absolute paths.
sam build --template infra/template.yaml --config-file "$PWD/infra/samconfig.toml"
# The configuration goes with the stack: into the built template's Metadata
# (Hookgate::Config), deployed as JSON (--use-json), where `hookgate --stack`
# reads it with GetTemplate (the operator's Read policy, ReadDeployedConfig).
# It holds secret references only: check-config refuses a literal secret.
.venv-tools/bin/python - "$CONFIG" <<'PY'
import sys
from samcli.yamlhelper import yaml_dump, yaml_parse
path = ".aws-sam/build/template.yaml"
template = yaml_parse(open(path, encoding="utf-8").read())
template.setdefault("Metadata", {})["Hookgate::Config"] = open(sys.argv[1], encoding="utf-8").read()
open(path, "w", encoding="utf-8").write(yaml_dump(template))
PY
[ "${BUILD_ONLY:-}" = 1 ] && exit 0
if [ "${GUIDED:-}" = 1 ]; then
  # --guided saves its answers (the e-mail address too) into the config file
  # it is given: a copy of the shared one, ignored by git.
  mkdir -p "$STATE"
  GUIDED_CONFIG="$(cd "$STATE" && pwd)/samconfig-$STACK.toml"
  cp infra/samconfig.toml "$GUIDED_CONFIG"
  sam deploy --guided --config-file "$GUIDED_CONFIG" --stack-name "$STACK" \
    --s3-prefix "$STACK" --use-json \
    --parameter-overrides "${OVERRIDES[@]}"
else
  # Artifacts under the stack's own prefix: the deployer's policies grant no more.
  sam deploy --config-file "$PWD/infra/samconfig.toml" --stack-name "$STACK" --s3-prefix "$STACK" \
    --use-json --parameter-overrides "${OVERRIDES[@]}"
fi
# Deployed: what the stack now runs with is what the next deploy starts from.
.venv/bin/python scripts/deploy_params.py --stack "$STACK" --state "$STATE" --save-deployed
