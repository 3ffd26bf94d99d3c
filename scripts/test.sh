#!/usr/bin/env bash
# Set up (idempotent) and run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh test
. .venv/bin/activate
export DS_ACCELERATOR=cpu
# The linter first (a second): a blind except or an undefined name fails the run before the tests do.
ruff check .
# Two workers, each test file on one of them (--dist loadfile: a file's module fixtures, e.g. a trained
# predictor, are built once): 4m45s against 7m15s in one process on this 2-core machine (2026-12-07). The
# README's commands must stay under 10 minutes with set-up. PRENET_TEST_WORKERS=0 runs in one process; later
# arguments win (e.g. `bash scripts/test.sh tests/test_report.py -n 0`).
python -m pytest -q -n "${PRENET_TEST_WORKERS:-2}" --dist loadfile "$@"
