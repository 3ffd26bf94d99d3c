"""XLA per-element pointwise costs: the committed table, the aten map and the nearest-lower-SM lookup."""
from __future__ import annotations

from pathlib import Path

import pytest

from predictor_models.datasets import pointwise_cycles as pc

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"

TABLE = {"sm_70": {"exponential": {"F32": 79.0, "F16": 128.0}, "add": {"F32": 6.0}, "divide": {"F32": 21.0}},
         "sm_86": {"exponential": {"F32": 86.0}},
         "sm_100": {"exponential": {"F32": 82.0}, "erf": {"F32": 161.0}, "multiply": {"F32": 7.0},
                    "add": {"F32": 7.0}}}


def test_committed_table_shape_and_values():
    table = pc.load_cycles()
    assert list(table) == ["sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100"]
    assert {dtype for ops in table.values() for d in ops.values() for dtype in d} <= set(pc.FLOAT_TYPES)
    assert table["sm_90"]["exponential"] == {"F16": 102.0, "F32": 79.0, "F64": 376.0}
    assert table["sm_90"]["tanh"]["F16"] > table["sm_90"]["tanh"]["F32"]   # half costs more per element


def test_nearest_lower_sm_generation_is_picked():
    assert pc.cycles_per_element("exp", "float32", 8.0, table=TABLE) == 79.0     # sm_80 -> sm_70
    assert pc.cycles_per_element("exp", "float32", 8.9, table=TABLE) == 86.0     # sm_89 -> sm_86
    assert pc.cycles_per_element("exp", "float32", 9.0, table=TABLE) == 86.0     # sm_90 -> sm_86
    assert pc.cycles_per_element("exp", "float32", 12.0, table=TABLE) == 82.0    # sm_120 -> sm_100
    assert pc.cycles_per_element("exp", "float32", 6.1, table=TABLE) is None     # nothing at or below
    # per opcode: on sm_86 the add and divide of a sigmoid come from sm_70, its exp from sm_86
    assert pc.cycles_per_element("aten::sigmoid", "float32", 8.6, table=TABLE) == 86.0 + 6.0 + 21.0
    assert pc.cycles_per_element("gelu", "float32", 9.0, table=TABLE) is None    # erf: sm_100 only
    assert pc.cycles_per_element("gelu", "float32", 9.0, table=TABLE, allow_newer=True) == 161 + 3 * 7 + 6   # add: sm_70


def test_aten_names_and_dtypes():
    assert pc.aten_base("aten::exp_") == pc.aten_base("aten.exp.default") == pc.aten_base("_foreach_exp_") == "exp"
    assert pc.cycles_per_element("aten::exp.default", "torch.float16", 7.5, table=TABLE) == 128.0
    assert pc.cycles_per_element("exp", "bfloat16", 7.0, table=TABLE) == 128.0   # BF16 priced as F16
    assert pc.cycles_per_element("relu", "float32", 9.0, table=TABLE) is None
    assert pc.cycles_per_element("exp", "int32", 9.0, table=TABLE) is None
    assert pc.cycles_per_element("exp", "float32", 9.0) == 79.0                   # the committed table


def test_build_writes_the_committed_table(tmp_path):
    if not (SHARED / pc.RAW_FILE).is_file():
        pytest.skip(f"raw XLA table not found under {SHARED}")
    out = tmp_path / "cycles.json"
    pc.build(SHARED, out)
    assert out.read_text() == pc.TABLE_PATH.read_text()
