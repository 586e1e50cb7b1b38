# One command runs the server, one runs the tests. Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
NEO4J := scripts/neo4j-test-server

.PHONY: run install ui-browser test test-only lint bench bench-quick peers claude-code ts-client mutation neo4j-start neo4j-stop neo4j-mark clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) ui-browser

## ui-browser: Debian's chromium for the inspector's browser tests (Playwright drives it; it
## never downloads a browser of its own). Installed with apt-get when root; CI must have it.
ui-browser:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing chromium for the inspector's browser tests (apt-get)"; \
		(apt-get install -y -qq chromium || (apt-get update -qq && apt-get install -y -qq chromium)) >/dev/null; \
	elif [ "$$CI" = true ]; then \
		echo "chromium is missing and cannot be installed here: apt-get install -y chromium"; exit 1; \
	else \
		echo "chromium not found: the inspector's browser tests will skip; install it with: apt-get install -y chromium"; \
	fi

## run: the memory server on the embedded store (streamable HTTP on 127.0.0.1:8765)
run: $(STAMP)
	$(VENV)/bin/kenning-encounter serve $(ARGS)

## test: the whole suite, on WORKERS processes (pytest-xdist). Its Neo4j tests all run on
## one worker against one real Neo4j with GDS (--dist loadgroup: tests/conftest.py), started
## (and marked) for it when Java and Maven are here, unless KENNING_ENCOUNTER_TEST_NEO4J_URIS
## or _URI names one (the first named serves). One server plans each statement and warms its
## JIT once, not once a worker; the other worker's tests see no Neo4j. NEO4J_URI is never
## used: it names a real memory, and the suite empties the database it runs on.
## PYTHONDONTWRITEBYTECODE is dropped for the run: with it, every worker rewrote the asserts
## of all ~370 test modules again (about 9 s of CPU each), and every child Python (servers,
## CLI commands, hooks) compiled again each module of ours whose cached bytecode was stale.
WORKERS ?= 2
test: $(STAMP) peers claude-code ts-client
	@set -e; unset PYTHONDONTWRITEBYTECODE; \
	if [ -z "$$KENNING_ENCOUNTER_TEST_NEO4J_URI$$KENNING_ENCOUNTER_TEST_NEO4J_URIS" ] && command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; then \
		uri=$$(bash $(NEO4J) start-many 1); \
		trap 'bash $(NEO4J) stop-many 1 >/dev/null 2>&1 || true' EXIT; \
		export KENNING_ENCOUNTER_TEST_NEO4J_URIS="$$uri" KENNING_ENCOUNTER_TEST_NEO4J_URI="$$uri" \
			KENNING_ENCOUNTER_TEST_NEO4J_USERNAME=neo4j \
			KENNING_ENCOUNTER_TEST_NEO4J_PASSWORD="$${NEO4J_TEST_PASSWORD:-kenning-test-pw}"; \
	fi; \
	$(PY) -m pytest -n $(WORKERS) --dist loadgroup $(PYTEST_ARGS)

## test-only: the suite in one process, starting nothing (Neo4j: KENNING_ENCOUNTER_TEST_NEO4J_URI if set)
test-only: $(STAMP)
	unset PYTHONDONTWRITEBYTECODE; $(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench scripts
	$(VENV)/bin/ruff format --check src tests bench scripts
	$(VENV)/bin/pyright --pythonpath $(PY)

## peers: install the servers the peers benchmark compares against (npm, a separate venv)
peers: $(STAMP)
	@if command -v npm >/dev/null 2>&1; then $(PY) -m bench.peers_bench --install; \
	else echo "npm not found: the peers benchmark and its tests will skip the reference server"; fi

## claude-code: the pinned Claude Code CLI the harness tests drive (npm, into tests/harness/.claude-code)
claude-code: $(STAMP)
	@if command -v npm >/dev/null 2>&1; then $(PY) -m tests.harness.install_claude \
		|| echo "Claude Code could not be installed: the harness tests will skip (a failure under CI=true)"; \
	else echo "npm not found: the Claude Code harness tests will skip (a failure under CI=true)"; fi

## ts-client: the pinned TypeScript MCP client the client tests drive (npm ci, into tests/clients/node_modules)
ts-client: $(STAMP)
	@if command -v npm >/dev/null 2>&1; then $(PY) -m tests.clients.install_sdk \
		|| echo "the TypeScript MCP client could not be installed: its tests will skip (a failure under CI=true)"; \
	else echo "npm not found: the TypeScript client tests will skip (a failure under CI=true)"; fi

bench: $(STAMP) peers
	$(PY) -m bench $(ARGS)

bench-quick: $(STAMP) peers
	$(PY) -m bench --quick $(ARGS)

neo4j-start:
	bash $(NEO4J) start

## neo4j-mark: let the tests use (and empty) the scratch Neo4j KENNING_ENCOUNTER_TEST_NEO4J_URI names; it must be empty
neo4j-mark:
	bash $(NEO4J) mark

neo4j-stop:
	bash $(NEO4J) stop

## mutation: mutmut over the load-bearing modules, each with its own tests (MODULES=memory/validate.py for one)
mutation: $(STAMP)
	$(PY) scripts/mutation.py $(MODULES)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build dist src/*.egg-info
