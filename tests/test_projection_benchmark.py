"""The arithmetic of `benchmarks/projection_accuracy.py` (relative speed per reference and over pairs)."""
import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("projection_accuracy", BENCH / "projection_accuracy.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCH))


def _row(gpu, measured, predicted, reference=False, group="m/1"):
    return {"gpu": gpu, "measured_s": measured, "predicted_s": predicted, "reference": reference, "group": group}


ROWS = [_row("A", 1.0, 1.0, reference=True), _row("B", 2.0, 3.0), _row("C", 4.0, 4.0),
        _row("A", 1.0, 2.0, reference=True, group="m/2"), _row("B", 2.0, 2.0, group="m/2")]


def test_relative_errors_use_the_flagged_reference_of_each_group(bench):
    errors = {(r["group"], r["gpu"]): r["ape"] for r in bench.relative_errors(ROWS)}
    # m/1: B is predicted 3x the reference against a measured 2x; C is exact; m/2: B 1x against 2x
    assert errors == {("m/1", "B"): 0.5, ("m/1", "C"): 0.0, ("m/2", "B"): 0.5}


def test_relative_errors_against_another_gpu(bench):
    errors = {(r["group"], r["gpu"]): r["ape"] for r in bench.relative_errors(ROWS, "B")}
    assert errors[("m/1", "A")] == pytest.approx(1 / 3, abs=1e-4)   # predicted 1/3 against measured 1/2
    assert errors[("m/1", "C")] == pytest.approx(1 / 3, abs=1e-4)   # predicted 4/3 against measured 2
    assert errors[("m/2", "A")] == pytest.approx(1.0)                # predicted 1 against measured 1/2


def test_pair_errors_cover_every_ordered_pair_within_a_group(bench):
    errors = bench.pair_errors(ROWS)
    assert len(errors) == 3 * 2 + 2 * 1
    # m/1: A/B 1/3 vs 1/2, B/A 3 vs 2, A/C and C/A exact, B/C 3/4 vs 1/2, C/B 4/3 vs 2; m/2: A/B 1 vs 1/2, B/A 1 vs 2
    assert sorted(round(e, 4) for e in errors) == [0.0, 0.0, 0.3333, 0.3333, 0.5, 0.5, 0.5, 1.0]
