# slo-compiler: `make generate` compiles slo_specs/ into generated/; `make test` runs every check.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two stamps: generating needs only the runtime dependencies; tests, lint and types add the dev tools.
RUNTIME := $(VENV)/.installed-runtime
DEV := $(VENV)/.installed-dev
PY := $(BIN)/python
PIP := $(BIN)/pip --quiet --disable-pip-version-check
CLI := $(PY) -m compiler
DEBIAN_TOOLS := promtool amtool prometheus prometheus-alertmanager chromium chromedriver etcd etcdctl prometheus-node-exporter strace
DEBIAN_PACKAGES := prometheus prometheus-alertmanager chromium chromium-driver etcd-server etcd-client prometheus-node-exporter strace

.PHONY: help venv generate validate check diff test test-cold test-fast lint typecheck promtool-check tools bench bench-backtest bench-live-eval docs clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

$(PY):
	@echo "creating $(VENV)"
	@$(PYTHON) -m venv $(VENV)
	@$(PIP) install --upgrade pip

# pyproject.toml declares ranges; constraints/dev.txt locks the versions the suite passes with.
$(RUNTIME): pyproject.toml constraints/dev.txt | $(PY)
	@echo "installing slo-compiler into $(VENV) (runtime dependencies only)"
	@$(PIP) install -c constraints/dev.txt -e .
	@touch $@

# The dev install includes the runtime one, so it refreshes that stamp too.
$(DEV): pyproject.toml constraints/dev.txt | $(PY)
	@echo "installing slo-compiler and its dev tools into $(VENV)"
	@$(PIP) install -c constraints/dev.txt -e '.[dev,backtest]'
	@touch $@ $(RUNTIME)

venv: $(DEV) ## create .venv and install the package with its dev tools

generate: $(RUNTIME) ## compile slo_specs/ into generated/ (atomically)
	$(CLI) generate

validate: $(RUNTIME) ## report every problem in slo_specs/, write nothing
	$(CLI) validate

check: $(RUNTIME) ## fail when generated/ is not what slo_specs/ compiles to
	$(CLI) check

diff: $(RUNTIME) ## review the spec change against the merge base with main (DIFF_ARGS="--base REF --format markdown")
	$(CLI) diff $(DIFF_ARGS)

tools: ## install promtool, amtool, prometheus, alertmanager and Chromium (catalog tests) from Debian when missing
	@missing=""; for tool in $(DEBIAN_TOOLS); do command -v $$tool >/dev/null || missing="$$missing $$tool"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages $(DEBIAN_PACKAGES) (missing:$$missing)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(DEBIAN_PACKAGES) >/dev/null; \
	  else \
	    echo "missing:$$missing. Install them with: sudo apt-get install $(DEBIAN_PACKAGES)" >&2; exit 1; \
	  fi; \
	fi

VMALERT := .cache/victoria-metrics/usr/bin/vmalert

$(VMALERT): ## vmalert from Debian's victoria-metrics package, unpacked (not installed) for -dryRun checks
	@mkdir -p .cache/deb
	@if [ ! -f .cache/deb/victoria-metrics.deb ]; then \
	  (cd .cache/deb && apt-get download victoria-metrics >/dev/null 2>&1 || (apt-get update -qq && apt-get download victoria-metrics >/dev/null)) \
	  && mv .cache/deb/victoria-metrics_*.deb .cache/deb/victoria-metrics.deb; \
	fi
	dpkg -x .cache/deb/victoria-metrics.deb .cache/victoria-metrics
	@test -x $(VMALERT)

lint: $(DEV) ## ruff
	$(BIN)/ruff check compiler tests bench

typecheck: $(DEV) ## mypy --strict on compiler, tests and bench
	$(BIN)/mypy compiler tests bench

promtool-check: tools ## promtool check rules --lint=all --lint-fatal on every generated rule file
	promtool check rules --lint=all --lint-fatal generated/prometheus/rules/*.yaml

test: $(DEV) tools $(VMALERT) ## the whole suite: lint, types, pytest (the lab tier beside the rest: tests/suite.py)
	$(MAKE) --no-print-directory lint typecheck
	$(PY) tests/suite.py

test-cold: $(DEV) tools $(VMALERT) ## the whole suite with no promtool verdict kept from an earlier run (as CI's clean clone)
	$(MAKE) --no-print-directory lint typecheck
	SLO_TEST_PROMTOOL_STORE=off $(PY) tests/suite.py

test-fast: $(DEV) ## the fast tier (about 20 s): tests/unit and tests/targets, no promtool, server or other process
	$(PY) tests/suite.py --fast

bench: $(DEV) ## compile 1,000 synthetic specs (time per spec); the library's samples per evaluation against the floor
	$(PY) bench/bench_compile.py --specs 1000
	$(PY) bench/bench_rule_cost.py

bench-backtest: $(DEV) ## backtest the library over 14 days of a synthetic cluster in a real Prometheus (data cached in .cache/)
	$(PY) bench/bench_backtest.py --nodes 75 --days 17.1 --replay 14d --warmup 3d

bench: bench-backtest

bench-live-eval: $(DEV) ## the whole library evaluated live by a real Prometheus scraping a 7,500-node cluster (about 20 min)
	$(PY) bench/bench_live_eval.py --nodes 7500

bench: bench-live-eval

docs: $(DEV) ## build the manual (docs/, MkDocs) into site/, strict: a broken link, anchor or example fails
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean: ## remove the virtualenv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .cache site
