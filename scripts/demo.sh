#!/usr/bin/env bash
# Set up (idempotent) and run the demo: a small Lightning CNN trained with PreNeTCallback.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh lightning   # the demo trains with Lightning: the [lightning] extra
. .venv/bin/activate
python examples/lightning_cnn.py "$@"
