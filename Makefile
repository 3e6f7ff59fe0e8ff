# Two commands on a fresh machine: `make demo` and `make test`.
# Both create .venv when missing and install the project into it first.

PYTHON ?= python3
VENV := .venv
# Pinned agent CLIs live in a project cache, never in a global npm prefix.
export AXIS_AGENTS_DIR ?= $(CURDIR)/.cache/agents
AGENTS := claude-code codex gemini claude-sdk qwen-code opencode
# The demo (examples/quickstart) uses two of them: `make demo` installs only those.
DEMO_AGENTS := claude-code codex
BIN := $(VENV)/bin
# The package alone (what `make demo` needs), then its dev tools (what `make test` needs).
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo test lint typecheck pytest install agents clean schemas

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(DEV_STAMP)

install: $(DEV_STAMP)

# Tests that need an agent CLI skip loudly when it is missing (and fail under CI=true),
# so a machine without npm access still runs everything else. --typescript adds the pinned
# tsx loader (.ts configs and scenarios on a Node without type stripping).
agents: $(STAMP)
	$(BIN)/axis agents install --typescript $(AGENTS) || echo "warning: agent CLIs not installed; their tests will skip (or fail under CI=true)"

# The demo runs the real Claude Code and Codex CLIs (pinned) against the embedded
# scripted model server: offline, no API key.
demo: $(STAMP)
	$(BIN)/axis agents install $(DEMO_AGENTS)
	cd examples/quickstart && ../../$(BIN)/axis run

lint: $(DEV_STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(DEV_STAMP)
	$(BIN)/mypy src

# Every core: tests are process-isolated (own folders, ports from the OS, markers per run);
# the Docker image tests share one private dockerd, so they keep to one worker (xdist_group).
PYTEST_WORKERS ?= auto
pytest: $(DEV_STAMP) agents
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadgroup

test: system-deps lint typecheck pytest

schemas: $(DEV_STAMP)
	$(BIN)/axis schema --out schemas

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# --- ax-task-runner image (docker/, docs/runner-image.md) ---------------------------------
.PHONY: build-task-runner system-deps
TASK_RUNNER_TAG ?= axis-eval/ax-task-runner:dev

# Builds the image with no registry pull (debootstrap base, cached in .cache/ax-task-runner)
# into the Docker daemon that answers, or into a private one and saves it to a tar there.
build-task-runner: $(DEV_STAMP) system-deps
	$(BIN)/python docker/build.py --tag $(TASK_RUNNER_TAG)

# The docker sandbox's default image (docs/runner-image.md, "The agent image"): the runner
# image on a base with Debian's nodejs, plus the pinned agent CLIs `make agents` installs
# (those whose package.json engines accept that node). No registry pull; cached in
# .cache/ax-task-runner. AGENT_IMAGE_AGENTS=claude-code,codex picks a few.
.PHONY: build-agent-image
AGENT_IMAGE_TAG ?= axis-eval/ax-agents:dev
AGENT_IMAGE_AGENTS ?=
build-agent-image: $(DEV_STAMP) system-deps agents
	$(BIN)/python docker/build_agents.py --tag $(AGENT_IMAGE_TAG) --agents "$(AGENT_IMAGE_AGENTS)"

# docker.io and debootstrap for the image tests, Debian's chromium for the HTML report
# tests (driven by Playwright's Python package; Playwright's own browser downloads are never
# used), and bubblewrap (bwrap), the default sandbox of every job: installed when missing
# and running as root (with service starts blocked, so no
# system dockerd creates a bridge); otherwise a loud warning, and those tests skip (or fail
# under CI=true).
system-deps:
	@missing=""; \
	command -v dockerd >/dev/null 2>&1 || missing="$$missing docker.io"; \
	command -v debootstrap >/dev/null 2>&1 || missing="$$missing debootstrap"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "system-deps: apt-get install$$missing"; \
	  policy=""; if [ ! -e /usr/sbin/policy-rc.d ]; then \
	    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d; policy=1; fi; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; } \
	    || echo "WARNING: system-deps: apt-get install$$missing failed; their tests will skip (fail under CI=true)"; \
	  if [ -n "$$policy" ]; then rm -f /usr/sbin/policy-rc.d; fi; \
	else \
	  echo "##########################################################################"; \
	  echo "# WARNING: missing$$missing, and not root (or no apt-get) to install it."; \
	  echo "# The ax-task-runner image tests (docker.io, debootstrap), the HTML report"; \
	  echo "# browser tests (chromium) and the bwrap sandbox tests (bubblewrap) will SKIP"; \
	  echo "# (and FAIL under CI=true); jobs run unconfined (sandbox none) without bwrap."; \
	  echo "##########################################################################"; \
	fi
