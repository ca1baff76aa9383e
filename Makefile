# slo-compiler: `make generate` compiles slo_specs/ into generated/; `make test` runs every check.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PY := $(BIN)/python
CLI := $(PY) -m compiler
DEBIAN_TOOLS := promtool amtool prometheus prometheus-alertmanager

.PHONY: help venv generate validate check test lint typecheck promtool-check tools bench clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP) ## create .venv and install the package with its dev tools

generate: $(STAMP) ## compile slo_specs/ into generated/ (atomically)
	$(CLI) generate

validate: $(STAMP) ## report every problem in slo_specs/, write nothing
	$(CLI) validate

check: $(STAMP) ## fail when generated/ is not what slo_specs/ compiles to
	$(CLI) check

tools: ## install promtool, amtool, prometheus and alertmanager from Debian when missing
	@missing=""; for tool in $(DEBIAN_TOOLS); do command -v $$tool >/dev/null || missing="$$missing $$tool"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages prometheus and prometheus-alertmanager (missing:$$missing)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus prometheus-alertmanager >/dev/null; \
	  else \
	    echo "missing:$$missing. Install them with: sudo apt-get install prometheus prometheus-alertmanager" >&2; exit 1; \
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

lint: $(STAMP) ## ruff
	$(BIN)/ruff check compiler tests bench

typecheck: $(STAMP) ## mypy --strict on compiler, tests and bench
	$(BIN)/mypy compiler tests bench

promtool-check: tools ## promtool check rules --lint=all --lint-fatal on every generated rule file
	promtool check rules --lint=all --lint-fatal generated/prometheus/rules/*.yaml

test: $(STAMP) tools $(VMALERT) ## the whole suite: lint, types, pytest (promtool, amtool, vmalert on generated/)
	$(MAKE) --no-print-directory lint typecheck
	$(BIN)/pytest -q -n 2

bench: $(STAMP) ## compile 1,000 synthetic specs; print time per spec and the load+schema share
	$(PY) bench/bench_compile.py --specs 1000

clean: ## remove the virtualenv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .cache
