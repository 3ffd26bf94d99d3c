"""Whether the run itself splits its model (tensor parallelism over DTensor), read from parameter metadata.

Lightning's ``ModelParallelStrategy`` (and torchtitan, or any ``parallelize_module`` call) makes each split
parameter a ``DTensor`` whose ``device_mesh`` names its dimensions (Lightning: "data_parallel",
"tensor_parallel"); a ``Shard`` placement on a dimension that is not the data-parallel one (FSDP2 shards over
that) is tensor parallelism of that dimension's size. Only public DTensor attributes are read
(``placements``, ``device_mesh``, ``shape``), nothing is gathered.

The run is measured as it runs and its row says so (``layout.source == "run"``); its recorded ops are one
rank's shards, so the projection does not carry them to other hardware (`projection/__init__.py` says why in
the report's notes). A DeepSpeed ``PipelineEngine`` records its layout from its process grid instead
(`integrations.deepspeed.pipeline_layout`).
"""
from __future__ import annotations

from typing import Any

_DATA_PARALLEL_WORDS = ("data", "dp", "fsdp", "replicate", "shard")


def _tensor_parallel_dims(mesh: Any) -> list[int]:
    """Mesh dimensions that are not data parallel (by their names; unnamed meshes: none can be told apart)."""
    names = getattr(mesh, "mesh_dim_names", None) or ()
    return [i for i, name in enumerate(names) if not any(word in str(name).lower() for word in _DATA_PARALLEL_WORDS)]


def run_layout(model: Any) -> dict[str, Any] | None:
    """``{"tp", "pp", "source", "sharded_params", "unsharded_params"}`` of a model whose parameters are split
    over a tensor-parallel mesh dimension, else None."""
    tp = 1
    local = whole = 0
    found = False
    for param in getattr(model, "parameters", lambda: [])():
        placements, mesh = getattr(param, "placements", None), getattr(param, "device_mesh", None)
        if placements is None or mesh is None:
            continue
        dims = _tensor_parallel_dims(mesh)
        sharded = [i for i, placement in enumerate(placements) if i in dims and _is_shard(placement)]
        for i in sharded:
            tp = max(tp, int(mesh.size(i)))
        found = found or bool(sharded)
        whole += int(param.numel())
        local += int(param.to_local().numel())
    if not found or tp <= 1:
        return None
    return {"tp": tp, "pp": 1, "source": "DTensor parameters sharded over a tensor-parallel mesh dimension",
            "sharded_params": local, "unsharded_params": whole}


def _is_shard(placement: Any) -> bool:
    is_shard = getattr(placement, "is_shard", None)
    return bool(is_shard()) if callable(is_shard) else False
