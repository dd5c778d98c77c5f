# duetime: `make run` starts the local stack, `make test` runs every check.
# Both set themselves up: they create .venv and install what they need.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.installed

export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_CLI_TELEMETRY := true
export CDK_DISABLE_VERSION_CHECK := 1
export AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED := true
export npm_config_update_notifier := false

.PHONY: install run test lint typecheck pytest bench bench-aws asset synth clean simulate

install: $(STAMP) $(NODE_STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(NODE_STAMP): package.json
	npm install --no-audit --no-fund --silent
	touch $(NODE_STAMP)

run: $(STAMP)
	$(BIN)/duetime local $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: install
	$(BIN)/pytest $(PYTEST_ARGS)

test: install lint typecheck pytest

# Benchmarks (results, with command, machine and date, in BENCHMARKS.md).
bench: $(STAMP)
	$(PY) bench/recurrence.py
	$(PY) bench/admission.py

# The AWS code paths on moto: cost per million runs, and admission at small scale.
bench-aws: $(STAMP)
	$(PY) bench/cost.py
	$(PY) bench/admission_moto.py

# The Lambda asset: the project's packages and their runtime dependencies as
# wheels for the Lambda platform (no Docker).
asset: $(STAMP)
	$(PY) -m infra.build_asset

synth: install asset
	npx cdk synth --no-notices --quiet

clean:
	rm -rf $(VENV) node_modules cdk.out build .pytest_cache .mypy_cache .ruff_cache

# The deployment simulator: the synthesized stack run the way AWS would, on moto
# (docs/simulator.md). Short runs of every scenario, one table; SIMULATE_ARGS to change.
SIMULATE_ARGS ?= --short
simulate: install asset
	$(PY) -m sim all $(SIMULATE_ARGS)

# The full burst: 10,000 one-off schedules due at one instant, on modelled Lambda
# concurrency (docs/simulator.md, "A burst of 10,000"); about 6 minutes of wall time here.
.PHONY: simulate-burst
simulate-burst: install asset
	$(PY) -m sim burst --json $(BURST_ARGS)

# Reliability campaigns (figures in RELIABILITY.md): the model-based state
# machine at length (SOAK_EXAMPLES, SOAK_MINUTES bound it), and the kill -9
# soak of the local stack (SOAK_DURATION seconds of kills).
SOAK_EXAMPLES ?= 20000
SOAK_MINUTES ?= 0
SOAK_DURATION ?= 180
# e.g. SOAK_MODEL_ARGS="--moto-every 1": every chunk on moto (GSIs lag unless --no-index-lag)
SOAK_MODEL_ARGS ?=

.PHONY: soak soak-model soak-kill
soak: soak-model soak-kill

soak-model: $(STAMP)
	$(PY) bench/model_soak.py --examples $(SOAK_EXAMPLES) --max-minutes $(SOAK_MINUTES) $(SOAK_MODEL_ARGS)

soak-kill: $(STAMP)
	$(PY) bench/soak.py --duration $(SOAK_DURATION)

# The floors (docs/cost.md, BENCHMARKS.md "Floors"): the cost bench, local admission and
# the local burst of 10,000, the simulator's mixed day and burst of 10,000, one table with
# pass/fail; about 40 minutes on a quiet 2-core machine. Compared with the figures measured
# before the planner's redesign (bench/floors-before.json); FLOORS_ARGS to change, e.g.
# FLOORS_ARGS="--baseline bench/floors-before.json --out after.json".
FLOORS_ARGS ?= --baseline bench/floors-before.json
.PHONY: measure
measure: install asset
	$(PY) bench/floors.py $(FLOORS_ARGS)
