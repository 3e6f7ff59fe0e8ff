# Two commands on a fresh machine: `make demo` and `make test`.
# Both create .venv when missing and install the project into it first.

PYTHON ?= python3
VENV := .venv
# Pinned agent CLIs live in a project cache, never in a global npm prefix.
export AXIS_AGENTS_DIR ?= $(CURDIR)/.cache/agents
AGENTS := claude-code codex gemini claude-sdk qwen-code opencode
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest install agents clean schemas

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Tests that need an agent CLI skip loudly when it is missing (and fail under CI=true),
# so a machine without npm access still runs everything else.
agents: $(STAMP)
	$(BIN)/axis agents install $(AGENTS) || echo "warning: agent CLIs not installed; their tests will skip (or fail under CI=true)"

# The demo runs the real Claude Code and Codex CLIs (pinned) against the embedded
# scripted model server: offline, no API key.
demo: $(STAMP) agents
	cd examples/quickstart && ../../$(BIN)/axis run

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy src

pytest: $(STAMP) agents
	$(BIN)/pytest -q

test: lint typecheck pytest

schemas: $(STAMP)
	$(BIN)/axis schema --out schemas

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
