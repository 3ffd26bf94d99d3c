"""The committed H200 op table as a registered, non-default data source."""
from __future__ import annotations

from predictor_models.datasets import prenet_h200
from predictor_models.datasets.registry import DEFAULT_SOURCES, SOURCES, load_all


def test_h200_rows_load_as_their_own_source(tmp_path):
    assert SOURCES["prenet-h200"] is prenet_h200.load and "prenet-h200" not in DEFAULT_SOURCES
    samples, reports = load_all(tmp_path, ("prenet-h200",))   # no raw copy there: the committed file
    assert len(samples) == reports[0].kept == 108 and {s.source for s in samples} == {"prenet-h200"}
    assert {s.device for s in samples} == {"H200-SXM"}
    assert {s.op.dtype for s in samples} == {"float32", "bfloat16"}
    assert {s.op.op_class for s in samples} == {"gemm", "conv", "norm", "elementwise"}
    assert all(s.op.tf32 == (s.op.op_class == "conv" and s.op.dtype == "float32") for s in samples)
