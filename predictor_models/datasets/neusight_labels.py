"""NeuSight (MIT) per-node training labels of one transformer layer inside real models (FP32, PyTorch 2.1).

``label/<GPU>/<model>-train-<seq>-<batch>.csv`` is a torch.fx node table with measured forward and
backward latency (ms) per node. We turn each node into the ops it runs forward and backward
(a linear's backward is two GEMMs with transposed shapes and a bias reduction; softmax and
layer-norm backward are backward norms; pointwise backward is pointwise) and keep the nodes of the
first transformer layer (module path ``h.0`` / ``layer.0`` / ``layers.0``), which is what the issue
asks to check. Nodes that launch no kernel (view, size, getitem, permute, dtype casts to the same
type) are kept aside as "host-only": their measured time is reported, never predicted.
Only NVIDIA GPUs are used (AMD labels are another software stack).
"""
from __future__ import annotations

import ast
import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from predictor_models.op_spec import OpSpec

from .common import elementwise_op, embedding_op, gemm_op, norm_op
from .shipped_files import shipped_label_rows

DTYPE = "float32"
_LAYER0 = re.compile(r"(?:\bh|\blayer|\blayers)\.0\b")
_HOST_ONLY = {"size", "view", "permute", "transpose", "unsqueeze", "expand", "reshape", "dim", "split", "to", "type",
              "type_as", "long", "bool", "getitem", "getattr", "finfo"}
_POINTWISE_BW2 = {"pow", "tanh", "gelu", "where", "masked_fill", "masked_fill_", "relu", "dropout"}
_NO_BW = {"eq", "gt", "lt", "ne", "cumsum", "max", "arange", "full", "ones", "tensor"}


@dataclass
class LabelNode:
    name: str
    kind: str                      # gemm / norm / pointwise / embedding / copy / host
    forward: list[OpSpec] = field(default_factory=list)
    backward: list[OpSpec] = field(default_factory=list)
    fw_ms: float = 0.0
    bw_ms: float = 0.0


@dataclass
class LabelSet:
    device: str
    model: str
    path: str
    nodes: list[LabelNode]


def _prod(shape) -> float:
    return float(math.prod(shape)) if shape else 1.0


def _target_key(op: str, target: str) -> str:
    if op == "call_method":
        return target
    m = re.search(r"(?:function|method) (\w+)", target)
    if m:
        return m.group(1)
    return "finfo" if "finfo" in target else target


def _linear(inp, out) -> tuple[list[OpSpec], list[OpSpec]]:
    m, k, n = _prod(inp[:-1]), float(inp[-1]), float(out[-1])
    fw = [gemm_op(1, m, n, k, DTYPE, bias=True, weight_shared=True, name="aten::addmm")]
    bw = [gemm_op(1, m, k, n, DTYPE, weight_shared=True, name="aten::mm"),
          gemm_op(1, k, n, m, DTYPE, name="aten::mm"),
          elementwise_op(m * n, 1, DTYPE, name="aten::sum")]
    return fw, bw


def _norm(shape, name: str) -> tuple[list[OpSpec], list[OpSpec]]:
    rows, cols = _prod(shape[:-1]), float(shape[-1])
    fw = norm_op(rows, cols, DTYPE, name=name)
    bw = norm_op(rows, cols, DTYPE, name=name + "_backward", backward=1)
    bw = OpSpec(bw.op_class, bw.dtype, bw.flops, bw.bytes_read + rows * cols * 4, bw.bytes_written, bw.dims, False, bw.name)
    return [fw], [bw]


def node_ops(row: dict) -> LabelNode:
    """The forward and backward ops of one fx node (empty lists for host-only nodes)."""
    op, target, name = row["op"], row["target"], row["Name"]
    node = LabelNode(name, "host", fw_ms=float(row["fw_latency"] or 0), bw_ms=float(row["bw_latency"] or 0))
    try:
        shapes = ast.literal_eval(row["input_shapes"] or "[]")
        out = ast.literal_eval(row["output_shape"] or "()")
    except (ValueError, SyntaxError):
        return node
    out = list(out) if isinstance(out, (tuple, list)) else []
    numel = _prod(out)
    if op == "call_module":
        lower = target.lower()
        if "norm" in lower or lower.endswith(("ln_1", "ln_2", "ln_f")):
            node.kind, (node.forward, node.backward) = "norm", _norm(shapes[0], "aten::native_layer_norm")
        elif "drop" in lower:
            node.kind = "pointwise"
            node.forward = [elementwise_op(numel, 1, DTYPE, name="aten::native_dropout")]
            node.backward = [elementwise_op(numel, 2, DTYPE, name="aten::native_dropout_backward")]
        elif "emb" in lower or lower.endswith(("wte", "wpe")):
            node.kind = "embedding"
            node.forward = [embedding_op(_prod(shapes[0]), float(out[-1]), 0, DTYPE)]
            node.backward = [OpSpec("embedding", DTYPE, 0.0, numel * 4, numel * 4,
                                    {"indices": _prod(shapes[0]), "dim": float(out[-1]), "backward": 1}, False,
                                    "aten::embedding_dense_backward")]
        elif "activation" in lower or lower.endswith("act_fn"):
            node.kind = "pointwise"
            node.forward = [elementwise_op(numel, 1, DTYPE, name="aten::gelu")]
            node.backward = [elementwise_op(numel, 2, DTYPE, name="aten::gelu_backward")]
        elif shapes and len(shapes[0]) >= 2:
            node.kind, (node.forward, node.backward) = "gemm", _linear(shapes[0], out)
        return node
    if op not in ("call_function", "call_method"):
        return node
    key = _target_key(op, target)
    tensors = [s for s in shapes if _prod(s) > 1]
    if key in _HOST_ONLY or not out:
        return node
    if key == "addmm" and len(shapes) == 3:
        node.kind, (node.forward, node.backward) = "gemm", _linear(shapes[1], out)
    elif key in ("matmul", "bmm") and len(shapes) == 2 and len(shapes[0]) >= 2 and len(shapes[1]) >= 2:
        a, b = shapes
        batch, m, k, n = _prod(a[:-2]), float(a[-2]), float(a[-1]), float(b[-1])
        node.kind = "gemm"
        node.forward = [gemm_op(batch, m, n, k, DTYPE, name="aten::bmm")]
        node.backward = [gemm_op(batch, m, k, n, DTYPE, name="aten::bmm"), gemm_op(batch, k, n, m, DTYPE, name="aten::bmm")]
    elif key == "softmax":
        node.kind, (node.forward, node.backward) = "norm", _norm(out, "aten::_softmax")
    elif key == "layer_norm":
        node.kind, (node.forward, node.backward) = "norm", _norm(out, "aten::native_layer_norm")
    elif key == "embedding":
        node.kind = "embedding"
        node.forward = [embedding_op(_prod(shapes[0]), float(out[-1]), 0, DTYPE)]
    elif key == "contiguous":
        node.kind = "copy"
        node.forward = [OpSpec("data_movement", DTYPE, 0.0, numel * 4, numel * 4, {"numel": numel}, False, "aten::clone")]
    else:
        node.kind = "pointwise"
        node.forward = [elementwise_op(numel, max(len(tensors), 1), DTYPE, name=f"aten::{key}")]
        if key in ("add", "sub"):
            node.backward = [elementwise_op(numel, 1, DTYPE, name="aten::sum")
                             for s in tensors if _prod(s) < numel]
        elif key in ("mul", "truediv"):
            node.backward = [elementwise_op(numel, 2, DTYPE, name=f"aten::{key}") for _ in tensors]
        elif key in _POINTWISE_BW2:
            node.backward = [elementwise_op(numel, 2, DTYPE, name=f"aten::{key}_backward")]
    return node


LABEL_COLUMNS = ("device", "model", "op", "target", "Name", "fw_latency", "bw_latency", "input_shapes", "output_shape")


def label_rows(data_dir: str | Path, *, layer_only: bool = True) -> Iterator[dict]:
    """The raw label rows (NVIDIA, training runs) with ``device`` (NeuSight's folder name, spaces for
    underscores) and ``model`` (the file stem) added; layer-0 rows only unless ``layer_only=False``."""
    root = Path(data_dir) / "neusight" / "label"
    for path in sorted(root.glob("*/*-train-*.csv")):
        device = path.parent.name.replace("_", " ")
        if device.startswith("AMD"):
            continue
        with open(path, newline="") as handle:
            for row in csv.DictReader(handle):
                where = row["target"] if row["op"] == "call_module" else row.get("meta", "")
                if layer_only and not _LAYER0.search(where or ""):
                    continue
                yield {**row, "device": device, "model": path.stem}


def label_sets(rows: Iterable[dict], where: str) -> list[LabelSet]:
    """Rows grouped into label sets, one per (device, model), in the order they come."""
    out: list[LabelSet] = []
    for row in rows:
        if not out or (out[-1].device, out[-1].model) != (row["device"], row["model"]):
            out.append(LabelSet(row["device"], row["model"], f"{where}:{row['device']}/{row['model']}", []))
        out[-1].nodes.append(node_ops(row))
    return out


def load_labels(data_dir: str | Path | None = None, *, layer_only: bool = True) -> list[LabelSet]:
    """Training label sets of NVIDIA GPUs; nodes of transformer layer 0 only unless ``layer_only=False``.

    ``data_dir`` None reads the layer-0 rows shipped with the package (see `datasets.shipped_files`)."""
    if data_dir is None:
        if not layer_only:
            raise ValueError("the shipped labels hold transformer layer 0 only; pass data_dir for whole models")
        return label_sets(shipped_label_rows(), "shipped")
    return label_sets(label_rows(data_dir, layer_only=layer_only), str(Path(data_dir) / "neusight" / "label"))
