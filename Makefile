# hookgate — one entry point for everything a user or CI runs.
#
# Needs only the Rust toolchain and Python 3: the emulator (moto's server,
# pinned in emulator/) is installed into a project-local venv, .venv/, and the
# SAM CLI, cargo-lambda and zig (pinned in infra/) into .venv-tools/.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VENV_PY := $(CURDIR)/$(VENV)/bin/python
# SAM CLI, cargo-lambda and zig (infra/requirements.txt) live in their own venv:
# their pins clash with the emulator's.
TOOLS := .venv-tools
SAM := SAM_CLI_TELEMETRY=0 $(CURDIR)/$(TOOLS)/bin/sam
# Debug info roughly doubles target/ size and build time; tests do not need it.
export CARGO_PROFILE_DEV_DEBUG ?= 0
export HOOKGATE_EMULATOR_PYTHON ?= $(VENV_PY)

.PHONY: test venv tools lint build invoke-fixtures bench coldstart emulator local demo deploy sam-build deploy-check clean

## test: everything CI checks — format, lints (clippy, cfn-lint, sam validate),
## unit and emulator-backed integration tests, every fixture through cargo lambda.
test: venv tools lint
	cargo test --workspace
	$(MAKE) invoke-fixtures
	$(MAKE) deploy-check

## venv: the project venv with the pinned AWS emulator.
venv: $(VENV)/.installed

$(VENV)/.installed: emulator/requirements.txt emulator/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check \
		-r emulator/requirements.txt -c emulator/constraints.txt
	touch $@

## tools: SAM CLI, cargo-lambda and zig, pinned, in .venv-tools.
tools: $(TOOLS)/.installed

$(TOOLS)/.installed: infra/requirements.txt infra/constraints.txt
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check \
		-r infra/requirements.txt -c infra/constraints.txt
	touch $@

lint: venv tools
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(VENV)/bin/cfn-lint infra/template.yaml
	$(SAM) validate --lint --template infra/template.yaml --region us-east-1

## invoke-fixtures: every events/ fixture through cargo lambda watch + invoke.
invoke-fixtures: venv tools
	cargo build --workspace --bins
	scripts/invoke-fixtures.sh

build:
	cargo build --workspace --bins

## bench: the ingress hot path (verify + parse + event key) per provider.
bench:
	cargo bench -p hookgate-bench --bench hot_path

## coldstart: cold start and peak RSS of the release ingress binary (scripts/coldstart.py).
coldstart: venv
	cargo build --release -p hookgate-ingress
	$(VENV_PY) scripts/coldstart.py

## local: emulator + resources from infra/template.yaml + simulated CRM + hookgate local (Ctrl-C stops).
local: venv
	cargo build --workspace --bins
	scripts/local.sh

## emulator: the local AWS on 127.0.0.1:$(PORT) in the foreground (Ctrl-C stops it).
PORT ?= 5000
emulator: venv
	$(VENV_PY) emulator/server.py --port $(PORT) --no-stdin-watch

## demo: a realistic day of webhooks through the whole local pipeline, with a
## report (target/demo/report.{json,html}); fails on a duplicate effect or a
## lost event. `make demo EVENTS=2000` scales it up.
EVENTS ?= 300
SEED ?= 42
demo: venv
	cargo build --workspace --bins
	target/debug/hookgate demo --events $(EVENTS) --seed $(SEED) --out target/demo

## deploy: check the config against the retry windows, sam build, sam deploy
## --guided (your AWS credentials). See scripts/deploy.sh for the variables.
deploy: venv tools
	cargo build --workspace --bins
	scripts/deploy.sh

## sam-build: the check, then `sam build` only (arm64 via cargo-lambda + zig).
sam-build: venv tools
	cargo build --workspace --bins
	BUILD_ONLY=1 scripts/deploy.sh

## deploy-check: make deploy's refusal, tested: a TTL below twice the longest
## re-delivery window stops it before anything is built; the defaults pass.
deploy-check: venv
	cargo build --workspace --bins
	@out=$$(CHECK_ONLY=1 INBOX_TTL_SECONDS=3600 scripts/deploy.sh 2>&1); rc=$$?; \
	  [ $$rc -eq 1 ] && grep -q "refusing to deploy" <<< "$$out" \
	  && grep -q "the TTL must be at least 518400 s" <<< "$$out" \
	  || { echo "deploy-check: a 3600 s TTL was not refused: $$out" >&2; exit 1; }
	@out=$$(CHECK_ONLY=1 RULE_MAX_EVENT_AGE_SECONDS=345600 scripts/deploy.sh 2>&1); rc=$$?; \
	  [ $$rc -eq 1 ] && grep -q "eventbridge" <<< "$$out" \
	  || { echo "deploy-check: a 4-day rule MaxEventAge was not refused: $$out" >&2; exit 1; }
	CHECK_ONLY=1 scripts/deploy.sh
	@echo "deploy-check: ok"

clean:
	rm -rf $(VENV) $(TOOLS) target .aws-sam
