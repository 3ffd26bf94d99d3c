#!/usr/bin/env bash
# Set up (idempotent) and run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh test
. .venv/bin/activate
export DS_ACCELERATOR=cpu
# The linter first (a second): a blind except or an undefined name fails the run before the tests do.
ruff check .
python -m pytest -q "$@"
