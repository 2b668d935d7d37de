#!/usr/bin/env bash
# `make console`: `hookgate console` against the stack `make local` is
# running, found by its name in the emulator's CloudFormation as an operator
# finds a deployed one (`--stack hookgate-local`), with the configuration the
# stack holds (no --config). Extra arguments go to the console
# (`make console ARGS='--port 9000'`).
set -euo pipefail
cd "$(dirname "$0")/.."

[[ -f .local/stack.env && -f .local/local.toml ]] \
  || { echo "make console: no local stack here; run make local first (in another terminal)" >&2; exit 1; }
export AWS_ENDPOINT_URL="http://127.0.0.1:${HOOKGATE_EMULATOR_PORT:-4566}" AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
curl -s -o /dev/null "$AWS_ENDPOINT_URL" \
  || { echo "make console: nothing answers at $AWS_ENDPOINT_URL; is make local running?" >&2; exit 1; }
exec target/debug/hookgate --stack hookgate-local console "$@"
