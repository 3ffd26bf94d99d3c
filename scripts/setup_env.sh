#!/usr/bin/env bash
# Create (or reuse) .venv and install the project into it. Idempotent.
# torch goes in first and pinned, so that nothing later pulls an unpinned CUDA build onto a CPU machine:
#   - no NVIDIA GPU: torch==2.13.0 CPU build (on this machine type it lies on disk under PIP_FIND_LINKS);
#   - NVIDIA GPU (nvidia-smi answers): the same release's default (CUDA) build from PyPI.
# Override with PRENET_TORCH_SPEC, e.g. PRENET_TORCH_SPEC="torch==2.14.1".
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-}"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
. .venv/bin/activate
TORCH_SPEC="${PRENET_TORCH_SPEC:-torch==2.13.0}"
if ! python -c "import torch" 2>/dev/null; then
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
        echo "[setup] NVIDIA GPU found: installing $TORCH_SPEC (CUDA build)"
        pip install -q "$TORCH_SPEC"
    else
        echo "[setup] no NVIDIA GPU: installing $TORCH_SPEC (CPU build)"
        # Here the CPU wheel (2.13.0+cpu) lies under PIP_FIND_LINKS and wins over PyPI's CUDA build.
        # Elsewhere, point PRENET_TORCH_INDEX at a CPU wheel index.
        pip install -q "$TORCH_SPEC" ${PRENET_TORCH_INDEX:+--index-url "$PRENET_TORCH_INDEX"}
    fi
fi
# Install the project itself (editable) only when its metadata changed since the last install.
STAMP=.venv/.prenet-installed
WANT="$(cat pyproject.toml | sha256sum | cut -c1-16)-${EXTRAS}"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
    echo "[setup] installing prenet-callbacks${EXTRAS:+[$EXTRAS]}"
    pip install -q -e ".${EXTRAS:+[$EXTRAS]}"
    echo "$WANT" > "$STAMP"
fi
