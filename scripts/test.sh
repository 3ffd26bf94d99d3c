#!/usr/bin/env bash
# Set up (idempotent) and run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh test
. .venv/bin/activate
export DS_ACCELERATOR=cpu
# The linter first (a second): a blind except or an undefined name fails the run before the tests do.
ruff check .
# The suite is CPU-bound: one test process per core, at most four (each imports torch and Lightning), whole files per
# process so that a module's fixtures are built once (one process took 4-7 minutes on this 2-core machine, by the
# hour). PRENET_TEST_WORKERS=1 runs it in this process (a debugger, `--pdb`).
WORKERS="${PRENET_TEST_WORKERS:-$(python -c 'import os; print(min(4, len(os.sched_getaffinity(0))))')}"
if [ "$WORKERS" -gt 1 ]; then
    set -- -n "$WORKERS" --dist loadfile "$@"
fi
python -m pytest -q "$@"
