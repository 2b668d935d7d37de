# hookgate — one entry point for everything a user or CI runs.
#
# Needs only the Rust toolchain and Python 3: the emulator (moto's server,
# pinned in tests/emulator/) is installed into a project-local venv, .venv/, and the
# SAM CLI, cargo-lambda and zig (pinned in infra/) into .venv-tools/.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VENV_PY := $(CURDIR)/$(VENV)/bin/python
# SAM CLI, cargo-lambda and zig (infra/requirements.txt) live in their own venv:
# their pins clash with the emulator's.
TOOLS := .venv-tools
SAM := SAM_CLI_TELEMETRY=0 $(CURDIR)/$(TOOLS)/bin/sam
# checkov (infra/scan-requirements.txt, every dependency pinned in
# infra/scan-constraints.txt) lives in a third venv: its tree is large.
SCAN := .venv-scan
# The SAM transform's output (scripts/transform.py), what CloudFormation creates.
TRANSFORMED := target/infra/template.json
# Debug info roughly doubles target/ size and build time; tests do not need it.
export CARGO_PROFILE_DEV_DEBUG ?= 0
export HOOKGATE_EMULATOR_PYTHON ?= $(VENV_PY)

.PHONY: test test-build integration-tests simulator-cases lint-rust lint-infra check lambda-trees docs-img browser-tools console sim mutants fuzz fuzz-smoke fuzz-tools venv tools scan-venv infra-transform infra-check infra-selftest lint docs-check build cli-check local-smoke coldstart-smoke perf perf-smoke invoke-fixtures bench coldstart emulator emulator-check local demo demo-check deploy sam-build deploy-check clean

## test: everything CI checks, cheapest first, so the first failure comes
## soonest: (1) make check, the inner loop; (2) the infra and lint stage:
## docs, clippy on the workspace, cfn-lint, sam validate, the real SAM
## transform, cfn-lint and checkov on its output, the structural checks;
## (3) the emulator-backed integration tests (recording every AWS call and
## EMF line), the console in headless Chromium, the simulator's regression
## seeds and SIM_CASES fresh scenarios, make local's script with the operator
## CLI against its stack (its AWS calls recorded too), the emulator's own
## tests and the README's make demo at its default size (recorded too), then
## the IAM and alarm checks over the recordings; (4) every fixture through cargo lambda, the
## operator CLI standing alone, the coldstart, perf and fuzz smoke runs, and
## make deploy's refusals. Each stage prints its wall time, and the last line
## the table and the total (scripts/stage.sh).
SIM_CASES ?= 8000
STAGE := scripts/stage.sh
test:
	@echo "make test: simulator seeds $(SIM_SEED) and $(SIM_TEST_SEED) (replay: make test SIM_SEED=$(SIM_SEED) SIM_TEST_SEED=$(SIM_TEST_SEED))"
	@$(STAGE) --start
	@$(STAGE) check $(MAKE) check
	@# The lint's Rust half, its infra half and the integration tests' build
	@# side by side: the infra half is Python, mostly waiting, and clippy
	@# builds in its own target directory.
	@$(STAGE) lint+build $(MAKE) -j3 -Otarget lint-rust lint-infra test-build
	@$(STAGE) tools $(MAKE) iam-tools browser-tools
	@rm -rf target/checks && mkdir -p target/checks
	@# The emulator-backed tests beside the simulator's scenarios (in release,
	@# in their own target directory): the tests mostly wait on the emulator.
	@$(STAGE) integration+simulator $(MAKE) -j2 -Otarget integration-tests simulator-cases
	@$(STAGE) local-smoke env HOOKGATE_CALL_LOG=$(CURDIR)/$(CALL_LOG) $(MAKE) local-smoke
	@# The README's make demo at its default size, alone (its latency is the
	@# machine's), its calls recorded for the IAM check; the emulator's own tests first.
	@$(STAGE) demo env HOOKGATE_CALL_LOG=$(CURDIR)/$(CALL_LOG) $(MAKE) emulator-check demo-check
	@$(STAGE) iam-alarm-check $(MAKE) iam-check alarm-check
	@$(STAGE) invoke-fixtures $(MAKE) invoke-fixtures
	@$(STAGE) cli-check $(MAKE) cli-check lambda-trees
	@$(STAGE) coldstart-smoke $(MAKE) coldstart-smoke
	@$(STAGE) perf-smoke $(MAKE) perf-smoke
	@$(STAGE) fuzz-smoke $(MAKE) fuzz-smoke
	@$(STAGE) deploy-check $(MAKE) deploy-check
	@$(STAGE) --report

# What make test's integration tests and simulator run, as their own targets
# so that make runs them side by side.
INTEGRATION := cargo test --workspace --exclude hookgate-core --exclude hookgate-operator \
	--exclude hookgate-memory
test-build:
	$(INTEGRATION) --no-run

integration-tests:
	HOOKGATE_CALL_LOG=$(CURDIR)/$(CALL_LOG) HOOKGATE_EMF_LOG=$(CURDIR)/$(EMF_LOG) $(INTEGRATION)

simulator-cases:
	SIM_SEED=$(SIM_TEST_SEED) SIM_CASES=$(SIM_CASES) CARGO_TARGET_DIR=$(CURDIR)/target/sim \
		cargo test --release -p hookgate-memory --test sim -- every_simulated_scenario the_regression_seeds

## check: the inner loop (its times after a one-line change and from a
## fresh clone: docs/performance.md, "Build times"). No Node, Chromium, venv
## or emulator (only the system's python3, for the length scripts): cargo fmt, the pure crates' dependency trees (no AWS SDK,
## scripts/check_pure.sh), the action path's function lengths
## (scripts/check_fn_length.py), the product files' lengths
## (scripts/check_file_length.py: at most 500 lines outside their tests), clippy and the tests of hookgate-core,
## hookgate-operator and hookgate-memory (the core's unit tests, the
## operator's pages, the contract suites on the memory ports, the service
## tests with the operator's decisions and reads, CHECK_CASES simulator
## scenarios from a fresh seed, or SIM_SEED=…).
CHECK_CASES ?= 2000
# clippy's own target directory: its check builds never wait on the test
# build's lock, and make check's are reused by make lint's.
CLIPPY_TARGET := $(CURDIR)/target/clippy
CLIPPY := CARGO_TARGET_DIR=$(CLIPPY_TARGET) cargo clippy
# The simulator's seed: given, or fresh (the clock's nanoseconds), once per
# make and passed to every sub-make and test; each target prints it first.
SIM_SEED := $(or $(SIM_SEED),$(shell date +%s%N))
export SIM_SEED
# make test's own scenarios, beyond make check's: another seed.
SIM_TEST_SEED := $(or $(SIM_TEST_SEED),$(shell date +%s%N))
export SIM_TEST_SEED
check:
	@echo "make check: simulator seed $(SIM_SEED) (replay: make check SIM_SEED=$(SIM_SEED))"
	cargo fmt --all -- --check
	scripts/check_pure.sh
	scripts/check_fn_length.py 60 crates/core/src/worker/*.rs crates/core/src/destination*.rs crates/core/src/failure.rs \
		$$(find crates/core/src/vendor crates/core/src/grant -name '*.rs') $$(ls crates/adapters/src/crm/*.rs | grep -v tests.rs) \
		crates/adapters/src/grants.rs crates/adapters/src/oauth.rs
	scripts/check_file_length.py 500 crates functions tests/memory/src/sim tests/memory/src/faults
	@# clippy beside the test build, one on each core: clippy in its own
	@# target directory (CLIPPY_TARGET, shared with make lint's), so neither
	@# waits for the other's lock.
	@$(CLIPPY) -p hookgate-core -p hookgate-operator -p hookgate-memory --all-targets -- -D warnings & clippy=$$!; \
		cargo test --no-run -p hookgate-core -p hookgate-operator -p hookgate-memory; built=$$?; \
		wait $$clippy && [ $$built = 0 ]
	SIM_CASES=$(CHECK_CASES) cargo test -p hookgate-core -p hookgate-operator -p hookgate-memory -- \
		--skip the_regression_seeds

# $(call pinned-venv,DIR,REQUIREMENTS,CONSTRAINTS): a venv with every
# package pinned by the constraints file.
define pinned-venv
	$(PYTHON) -m venv $(1)
	$(1)/bin/pip install --quiet --disable-pip-version-check -r $(2) -c $(3)
	touch $(1)/.installed
endef

## venv: the project venv with the pinned AWS emulator.
venv: $(VENV)/.installed

$(VENV)/.installed: tests/emulator/requirements.txt tests/emulator/constraints.txt
	$(call pinned-venv,$(VENV),tests/emulator/requirements.txt,tests/emulator/constraints.txt)

## browser-tools: Debian's chromium and chromium-driver, for the console's
## browser tests (tests/integration/tests/it/console.rs). apt-get, so root or sudo; the
## versions are Debian's current security release (docs/operations.md names
## the one last tested), not pinned: the archive keeps only the newest.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser-tools:
	@if ! command -v chromedriver >/dev/null || ! command -v chromium >/dev/null; then \
		export DEBIAN_FRONTEND=noninteractive; \
		$(SUDO) apt-get install -y -q --no-install-recommends chromium chromium-driver \
		|| { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q --no-install-recommends chromium chromium-driver; }; \
	fi
	@chromedriver --version

## tools: SAM CLI, cargo-lambda and zig, pinned, in .venv-tools.
tools: $(TOOLS)/.installed

$(TOOLS)/.installed: infra/requirements.txt infra/constraints.txt
	$(call pinned-venv,$(TOOLS),infra/requirements.txt,infra/constraints.txt)

## scan-venv: checkov, pinned with all its dependencies, in .venv-scan.
scan-venv: $(SCAN)/.installed

$(SCAN)/.installed: infra/scan-requirements.txt infra/scan-constraints.txt
	$(call pinned-venv,$(SCAN),infra/scan-requirements.txt,infra/scan-constraints.txt)

## docs-check: the README is at most 200 lines; every Markdown link and every
## document a source file names exists.
docs-check:
	$(PYTHON) scripts/check_docs.py

## lint: the Rust half (cargo fmt, clippy on the workspace) beside the infra
## half (docs, cfn-lint, sam validate, the transform, checkov, the
## structural checks); each target's output kept together (make -O).
lint:
	$(MAKE) -j2 -Otarget lint-rust lint-infra

lint-rust:
	cargo fmt --all -- --check
	$(CLIPPY) --workspace --all-targets -- -D warnings

lint-infra: venv tools docs-check
	$(VENV)/bin/cfn-lint infra/template.yaml
	$(SAM) validate --lint --template infra/template.yaml --region us-east-1
	$(MAKE) infra-check

## infra-transform: the real SAM transform (pinned aws-sam-translator) of
## infra/template.yaml into target/infra/template.json; fails on any error.
infra-transform: tools
	$(TOOLS)/bin/python scripts/transform.py --out $(TRANSFORMED)

## infra-check: the template as CloudFormation will create it — the transform,
## cfn-lint on the raw template and on the transformed output, checkov on the
## output (zero unsuppressed findings), the structural checks
## (scripts/check_infra.py), the deployer's policy against every resource type
## (scripts/check_deployer.py) and the broken-copy self-test. No cargo.
infra-check: venv tools scan-venv infra-transform
	@# I3011: every stateful resource states its DeletionPolicy and
	@# UpdateReplacePolicy (docs/deploy.md, "What outlives the stack").
	$(VENV)/bin/cfn-lint --include-checks I3011 -- infra/template.yaml
	@# W2001 (unused parameter): the transform inlines AsyncMaxRetryAttempts
	@# into the EventInvokeConfig, as CloudFormation does with the stack's value.
	$(VENV)/bin/cfn-lint --ignore-checks W2001 -- $(TRANSFORMED)
	$(SCAN)/bin/checkov --quiet --compact --framework cloudformation \
		--skip-download -f $(TRANSFORMED)
	$(TOOLS)/bin/python scripts/check_infra.py $(TRANSFORMED)
	@# The deployer's policies (docs/deployer-policy*.json) cover every resource type,
	@# each within one managed policy, and no scope of a stack takes another's.
	$(TOOLS)/bin/python scripts/check_deployer.py $(TRANSFORMED)
	$(TOOLS)/bin/python scripts/check_deployer.py --self-test
	$(MAKE) infra-selftest

## infra-selftest: each broken copy of the template (infra/fixtures/) is
## refused by the transform or by check_infra; an accepted one fails the build.
## And the local stack's outputs (scripts/test_provision.py): a copy of the
## template with an Output that has no local value is refused by provision.py.
infra-selftest: tools scan-venv
	$(TOOLS)/bin/python scripts/infra_selftest.py
	$(TOOLS)/bin/python scripts/test_provision.py

## invoke-fixtures: every events/ fixture through cargo lambda watch + invoke.
invoke-fixtures: venv tools
	cargo build --workspace --bins
	scripts/invoke-fixtures.sh

build:
	cargo build --workspace --bins

## local-smoke: make local's script, one signed webhook twice: new, duplicate,
## one CRM task; then hookgate --stack hookgate-local: status, send, logs,
## triage list, stats, doctor, a bulk approval interrupted by SIGINT (its
## report as the triage table) and the console.
local-smoke: venv
	cargo build --workspace --bins
	scripts/local-smoke.sh

## lambda-trees: each Lambda links only what it runs: the ingress, action and
## dlq-triage functions no operator service or console page, the ops function
## no page (scripts/check_lambda_trees.sh; cargo tree per function).
lambda-trees:
	scripts/check_lambda_trees.sh

## cli-check: the operator's hookgate holds no function crate, dev tooling or
## Lambda runtime, and no server but the console's (HTTP/1 on 127.0.0.1);
## it runs and signs from outside the checkout.
cli-check:
	cargo build --workspace --bins
	scripts/check_cli.sh

## sim: the deterministic simulator (tests/memory/src/sim/) over SEEDS scenarios
## (default 10,000), each in a world it draws, from SIM_SEED, or from a
## fresh seed printed first; in release. A failure prints its replay command.
SEEDS ?= 10000
sim:
	@echo "make sim: seed $(SIM_SEED), $(SEEDS) scenarios (replay: make sim SIM_SEED=$(SIM_SEED) SEEDS=$(SEEDS))"
	SIM_CASES=$(SEEDS) cargo test --release -p hookgate-memory --test sim \
		every_simulated_scenario -- --nocapture

## fuzz-tools: cargo-fuzz, pinned, in .tools (the targets build on nightly).
CARGO_FUZZ := $(CURDIR)/.tools/bin/cargo-fuzz
FUZZ_TARGETS := verify signed twilio_form config eventbridge apigw
fuzz-tools: $(CARGO_FUZZ)

$(CARGO_FUZZ):
	cargo install cargo-fuzz --version 0.12.0 --locked --root $(CURDIR)/.tools

## fuzz: every target for RUNS executions (default 10 million), from its
## seeds (tests/fuzz/seeds/, written by tests/fuzz/seeds.py); what it finds lands in
## tests/fuzz/artifacts/. The working corpus is target/fuzz-corpus/.
RUNS ?= 10000000
FUZZ_FLAGS ?= -runs=$(RUNS)
# No sanitizer by default: the code forbids unsafe, and AddressSanitizer slows
# every execution (docs/verification.md has the rates of both); a run with it:
# FUZZ_SANITIZER=address.
FUZZ_SANITIZER ?= none
# Optimised by default (cargo fuzz's release build with debug assertions);
# fuzz-smoke builds with --dev: its 5 s per target need no speed, and the
# optimised build cost 4 of make test's minutes.
FUZZ_BUILD ?=
fuzz: fuzz-tools
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p target/fuzz-corpus/$$t; \
		echo "fuzz: $$t"; \
		PATH=$(CURDIR)/.tools/bin:$$PATH cargo +nightly fuzz run --fuzz-dir tests/fuzz $(FUZZ_BUILD) \
			-s $(FUZZ_SANITIZER) $$t target/fuzz-corpus/$$t tests/fuzz/seeds/$$t -- $(FUZZ_FLAGS) \
			-print_final_stats=1 || exit 1; \
	done

## fuzz-smoke: each target for 5 seconds (in make test), so none can rot;
## built unoptimised (--dev).
fuzz-smoke:
	$(MAKE) fuzz FUZZ_FLAGS=-max_total_time=5 FUZZ_BUILD=--dev

## mutants: the share of the mutants of the core's state machines that the
## fast layer kills (the core's unit tests, the contract suites on memory,
## the service tests, 2,000 simulator scenarios): a figure for
## docs/verification.md, not a gate. cargo-mutants is pinned in .tools.
CARGO_MUTANTS := $(CURDIR)/.tools/bin/cargo-mutants
# Each a file or a folder of crates/core/src/.
MUTATED := inbox.rs ledger.rs worker/*.rs approval/*.rs triage.rs destination.rs
mutants: $(CARGO_MUTANTS)
	SIM_CASES=2000 PATH=$(CURDIR)/.tools/bin:$$PATH cargo mutants \
		$(foreach f,$(MUTATED),-f 'crates/core/src/$(f)') \
		--test-package hookgate-core --test-package hookgate-operator --test-package hookgate-memory -o target/mutants

$(CARGO_MUTANTS):
	cargo install cargo-mutants --version 27.1.0 --locked --root $(CURDIR)/.tools

## bench: the ingress hot path (verify + parse + event key) per provider.
bench:
	cargo bench -p hookgate-bench --bench hot_path

## coldstart: cold start and peak RSS of the release ingress binary (scripts/coldstart.py), with tracing off and on.
coldstart: venv
	cargo build --release -p hookgate-ingress
	$(VENV_PY) scripts/coldstart.py
	$(VENV_PY) scripts/coldstart.py --tracing

## perf: the Lambda-model benchmark of the release ingress (scripts/perf.py):
## K=4 instances, N=300 events x DUP=3 deliveries racing; a JSON report in
## target/perf/report.json. `make perf INSTANCES=… EVENTS=… DUP=… BODY=…`.
INSTANCES ?= 4
DUP ?= 3
BODY ?= 2048
perf: venv
	cargo build --release -p hookgate-ingress
	$(VENV_PY) scripts/perf.py --instances $(INSTANCES) --events $(EVENTS) --dup $(DUP) --body-bytes $(BODY)

## perf-smoke: the same on the debug binary, tiny, for correctness only (in
## make test; no timing asserted).
perf-smoke: venv
	cargo build --workspace --bins
	$(VENV_PY) scripts/perf.py --binary target/debug/ingress --smoke --out target/perf/smoke.json

## coldstart-smoke: the coldstart measurement once on the debug binary, a burst
## of 5 (every answer 202), each invocation with its trace header; no timing
## asserted. Part of make test.
coldstart-smoke: venv
	cargo build --workspace --bins
	$(VENV_PY) scripts/coldstart.py --binary target/debug/ingress --runs 1 --burst 5 --tracing

## local: emulator + resources from infra/template.yaml + simulated CRM + hookgate-dev local (Ctrl-C stops).
local: venv
	cargo build --workspace --bins
	scripts/local.sh

## console: the operator console (hookgate console) against the stack
## make local is running, on http://127.0.0.1:8790/ (ARGS= for more flags).
console:
	cargo build -p hookgate-cli
	scripts/console-local.sh $(ARGS)

## emulator-check: the emulator's own tests (tests/emulator/test_server.py): SQS's
## receives, deletes, visibility changes and sends on one queue serialised,
## long polls still concurrent.
emulator-check: venv
	$(VENV_PY) -m unittest tests/emulator/test_server.py

## emulator: the local AWS on 127.0.0.1:$(PORT) in the foreground (Ctrl-C stops it).
PORT ?= 5000
emulator: venv
	$(VENV_PY) tests/emulator/server.py --port $(PORT) --no-stdin-watch

## docs-img: the console's screenshots in docs/img (docs/operations.md),
## taken by its browser test; make test writes them under target/screenshots/.
docs-img: venv browser-tools
	HOOKGATE_SCREENSHOTS=$(CURDIR)/docs/img cargo test -p hookgate-tests --test it -- \
		console::an_outage_is_held_shown_and_approved_once_and_a_reject_sticks_in_a_real_browser

## demo: a realistic day of webhooks through the whole local pipeline, with a
## report (target/demo/report.{json,html}); fails on a duplicate effect or a
## lost event (any of its 12 invariants). `make demo EVENTS=2000` scales it
## up. make test runs it at the default size (its own stage).
EVENTS ?= 300
SEED ?= 42
demo: venv
	cargo build --workspace --bins
	target/debug/hookgate-dev demo --events $(EVENTS) --seed $(SEED) --out target/demo

## demo-check: make demo, then what its report must show beyond the exit
## code: every staged failure class in triage and decided, both report files
## (tests/dev/check-demo-report.py). make test's demo stage.
demo-check: demo
	$(VENV_PY) tests/dev/check-demo-report.py target/demo

## deploy: resolve and check the stack's parameters and the config, sam build,
## sam deploy without prompting (your AWS credentials; GUIDED=1 prompts).
## STACK_NAME, ALARM_EMAIL, … : see scripts/deploy.sh and docs/deploy.md.
deploy: venv tools infra-transform
	cargo build --workspace --bins
	scripts/deploy.sh

## sam-build: the check, then `sam build` only (arm64 via cargo-lambda + zig).
sam-build: venv tools infra-transform
	cargo build --workspace --bins
	BUILD_ONLY=1 scripts/deploy.sh

## deploy-check: make deploy's refusals and memory, tested without AWS
## (scripts/deploy-check.sh, CHECK_ONLY=1): a TTL below twice the longest
## re-delivery window, parameters outside their constraints, a stack name
## too long, the EventBridge rule and the config's sources disagreeing either
## way, a secret or key of another account or Region, the reference config;
## how the deployed, saved and default values rank (scripts/test_deploy_params.py);
## config/deploy.example.toml passes.
deploy-check: venv infra-transform
	cargo build --workspace --bins
	scripts/deploy-check.sh

clean:
	rm -rf $(VENV) $(TOOLS) $(SCAN) target .aws-sam

# ---- IAM and alarms proven by the tests (docs/iam.md) ----------------------
# `make test` runs cargo test with HOOKGATE_CALL_LOG / HOOKGATE_EMF_LOG set to
# these paths; the checks read them with the transformed template.
CALL_LOG ?= target/checks/calls.jsonl
EMF_LOG ?= target/checks/emf.jsonl
TRANSFORMED ?= target/infra/template.json
IAM_CHECK := tests/iam-check

.PHONY: iam-check alarm-check iam-tools provider-fixtures provider-fixtures-check provider-sdks \
	destination-fixtures destination-fixtures-check destination-sdks

# ---- The providers' SDKs and the fixtures they sign (docs/providers.md) ----
PROVIDERS_VENV := .venv-providers
PROVIDER_FIXTURES := tests/fixtures/providers

## provider-fixtures: writes tests/fixtures/providers/deliveries/*.json, each signed
## or checked by its provider's own SDK (pinned: PyPI and npm).
provider-fixtures: provider-sdks
	$(PROVIDERS_VENV)/bin/python $(PROVIDER_FIXTURES)/make.py

## provider-fixtures-check: makes them again and fails on any difference.
provider-fixtures-check: provider-sdks
	$(PROVIDERS_VENV)/bin/python $(PROVIDER_FIXTURES)/make.py --check

provider-sdks: $(PROVIDERS_VENV)/.installed $(PROVIDER_FIXTURES)/node_modules/.installed

$(PROVIDERS_VENV)/.installed: $(PROVIDER_FIXTURES)/requirements.txt $(PROVIDER_FIXTURES)/constraints.txt
	$(call pinned-venv,$(PROVIDERS_VENV),$(PROVIDER_FIXTURES)/requirements.txt,$(PROVIDER_FIXTURES)/constraints.txt)

$(PROVIDER_FIXTURES)/node_modules/.installed: $(PROVIDER_FIXTURES)/package.json $(PROVIDER_FIXTURES)/package-lock.json
	cd $(PROVIDER_FIXTURES) && npm ci --no-audit --no-fund --ignore-scripts
	touch $@

# ---- The CRM vendors' SDKs and the requests they send (tests/fixtures/destinations/README.md) ----
DESTINATION_FIXTURES := tests/fixtures/destinations

## destination-fixtures: writes tests/fixtures/destinations/requests/*.json, each the
## request a CRM vendor's own SDK sends (pinned: npm), recorded by a local
## server on 127.0.0.1; the two cases with no SDK call follow the documentation.
destination-fixtures: destination-sdks
	node $(DESTINATION_FIXTURES)/record.mjs

## destination-fixtures-check: records them again and fails on any difference.
destination-fixtures-check: destination-sdks
	node $(DESTINATION_FIXTURES)/record.mjs --check

destination-sdks: $(DESTINATION_FIXTURES)/node_modules/.installed

$(DESTINATION_FIXTURES)/node_modules/.installed: $(DESTINATION_FIXTURES)/package.json $(DESTINATION_FIXTURES)/package-lock.json
	cd $(DESTINATION_FIXTURES) && npm ci --no-audit --no-fund --ignore-scripts
	touch $@

## iam-tools: the IAM check's pinned node packages (npm ci, when the lock changes).
iam-tools: $(IAM_CHECK)/node_modules/.installed

$(IAM_CHECK)/node_modules/.installed: $(IAM_CHECK)/package.json $(IAM_CHECK)/package-lock.json
	cd $(IAM_CHECK) && npm ci --no-audit --no-fund --ignore-scripts
	touch $@

## iam-check: every recorded AWS call allowed by its function's role (or the
## operator policy) in the transformed template; unexercised grants need a
## reason; no operator policy reads or writes a secret, reads the grants table
## or decrypts. Then the broken copies (ingress without dynamodb:UpdateItem,
## the operator without execute-api:Invoke, the operator granted
## ssm:GetParameter, kms:Decrypt, secretsmanager:PutSecretValue or
## dynamodb:GetItem) must fail.
iam-check: iam-tools infra-transform
	@mkdir -p target/checks
	node $(IAM_CHECK)/check.mjs --template $(TRANSFORMED) --calls $(CALL_LOG) \
		--report target/checks/iam-report.json
	node $(IAM_CHECK)/check.mjs --template $(TRANSFORMED) --calls $(CALL_LOG) \
		--self-test ingress=dynamodb:UpdateItem
	node $(IAM_CHECK)/check.mjs --template $(TRANSFORMED) --calls $(CALL_LOG) \
		--self-test operator=execute-api:Invoke
	@# The action function writes a rotated refresh token with its own role.
	node $(IAM_CHECK)/check.mjs --template $(TRANSFORMED) --calls $(CALL_LOG) \
		--self-test action=secretsmanager:PutSecretValue
	@# No operator policy may read a secret, write one, read the grants table
	@# (OAuth2 access tokens) or decrypt: broken copies that grant it must be
	@# reported.
	node $(IAM_CHECK)/check.mjs --template $(TRANSFORMED) --calls $(CALL_LOG) \
		--grant-operator ssm:GetParameter
	node $(IAM_CHECK)/check.mjs --template $(TRANSFORMED) --calls $(CALL_LOG) \
		--grant-operator kms:Decrypt
	node $(IAM_CHECK)/check.mjs --template $(TRANSFORMED) --calls $(CALL_LOG) \
		--grant-operator secretsmanager:PutSecretValue
	node $(IAM_CHECK)/check.mjs --template $(TRANSFORMED) --calls $(CALL_LOG) \
		--grant-operator dynamodb:GetItem

## alarm-check: every alarm watches a series the captured EMF lines (or a
## metric filter) emit; then a copy with one alarm's Dimensions removed must fail.
alarm-check: venv infra-transform
	@mkdir -p target/checks
	$(VENV_PY) scripts/check_alarms.py --template $(TRANSFORMED) --emf $(EMF_LOG)
	$(VENV_PY) scripts/check_alarms.py --template $(TRANSFORMED) --emf $(EMF_LOG) \
		--self-test --self-test-out target/checks/alarm-self-test-template.json
