#!/usr/bin/env bash
# Set up (idempotent) and run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh test
. .venv/bin/activate
export DS_ACCELERATOR=cpu
python -m pytest -q "$@"
