# hookgate — one entry point for everything a user or CI runs.
#
# Needs only the Rust toolchain and Python 3: the emulator (moto's server,
# pinned in emulator/) is installed into a project-local venv, .venv/.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VENV_PY := $(CURDIR)/$(VENV)/bin/python
# Debug info roughly doubles target/ size and build time; tests do not need it.
export CARGO_PROFILE_DEV_DEBUG ?= 0
export HOOKGATE_EMULATOR_PYTHON ?= $(VENV_PY)

.PHONY: test venv lint build bench coldstart emulator local demo clean

## test: everything CI checks — format, lints, unit and emulator-backed integration tests.
test: venv lint
	cargo test --workspace

## venv: the project venv with the pinned AWS emulator.
venv: $(VENV)/.installed

$(VENV)/.installed: emulator/requirements.txt emulator/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check \
		-r emulator/requirements.txt -c emulator/constraints.txt
	touch $@

lint: venv
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(VENV)/bin/cfn-lint infra/template.yaml

build:
	cargo build --workspace

## bench: the ingress hot path (verify + parse + event key) per provider.
bench:
	cargo bench -p hookgate-core --bench hot_path

## coldstart: cold start and peak RSS of the release ingress binary (scripts/coldstart.py).
coldstart: venv
	cargo build --release -p hookgate-ingress
	$(VENV_PY) scripts/coldstart.py

## local: emulator + resources from infra/template.yaml + simulated CRM + hookgate local (Ctrl-C stops).
local: venv
	cargo build -p hookgate-cli
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
	cargo build -p hookgate-cli
	target/debug/hookgate demo --events $(EVENTS) --seed $(SEED) --out target/demo

clean:
	rm -rf $(VENV) target
