"""`prenet calibrate` and `calibrate_rows`/`calibrate_report`: a device whose ops run at a size-dependent
fraction of what the shipped predictor says is corrected on that device only, the folder loads
wherever a predictor is accepted, and every bad input is one clear error with nothing written."""
from __future__ import annotations

import json

import numpy as np
import pytest

from predictor_models.calibration import CalibratedPredictor, CalibrationError, calibrate_report, calibrate_rows
from predictor_models.calibration.select import hold_back, spread_pick
from predictor_models.datasets import write_rows
from predictor_models.datasets.common import Sample, conv_op, elementwise_op, gemm_op, norm_op
from predictor_models.hardware import lookup_hardware
from predictor_models.op_spec import OpSpec
from predictor_models.predictor import PredictorLoadError, load_predictor
from prenet_callbacks.cli import main

DEVICE = "L4"


def _ops(n: int, seed: int = 0) -> list[OpSpec]:
    rng = np.random.default_rng(seed)
    ops = []
    for i in range(n):
        kind = i % 4
        dtype = ("float32", "bfloat16")[(i // 4) % 2]
        if kind == 0:
            m, nn, k = (int(x) for x in 2 ** rng.integers(6, 13, size=3))
            ops.append(gemm_op(1, m, nn, k, dtype, name="aten::mm"))
        elif kind == 1:
            c, size = int(2 ** rng.integers(5, 9)), int(2 ** rng.integers(3, 7))
            ops.append(conv_op(int(2 ** rng.integers(2, 6)), c, c, size, size, 3, 3, 1, 1, dtype, name="aten::convolution"))
        elif kind == 2:
            ops.append(norm_op(int(2 ** rng.integers(8, 15)), int(2 ** rng.integers(7, 13)), dtype,
                               name="aten::native_layer_norm"))
        else:
            ops.append(elementwise_op(int(2 ** rng.integers(14, 26)), 2, dtype, name="aten::add"))
    return ops


def _measured(ops, seed: int = 1) -> np.ndarray:
    """What the device 'really' takes: slower than predicted, more so for long ops (a power-limited card)."""
    predicted = load_predictor().predict_seconds(ops, lookup_hardware(DEVICE))
    noise = np.random.default_rng(seed).normal(0.0, 0.02, size=len(ops))
    return predicted * np.exp(0.5 + 0.15 * (np.log10(predicted) + 4.0) + noise)


@pytest.fixture(scope="module")
def rows_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rows")
    ops = _ops(240)
    write_rows(folder / "L4.csv", [Sample(op, "NVIDIA L4", t, "collect") for op, t in zip(ops, _measured(ops))])
    return folder


def test_spread_pick_shares_groups_and_sizes():
    groups = np.array(["a"] * 100 + ["b"] * 10 + ["c"] * 400)
    size = np.arange(510, dtype=float)
    picked = spread_pick(groups, size, 60, seed=3)
    assert len(set(picked)) == 60 and np.sum(groups[picked] == "b") == 10      # small group fully taken
    assert abs(np.sum(groups[picked] == "a") - np.sum(groups[picked] == "c")) <= 1
    a = np.sort(size[picked][groups[picked] == "a"])
    assert a[0] < 10 and a[-1] > 90                                             # spread over the sizes
    fit, held = hold_back(groups, size, 0.25, seed=0)
    assert len(set(fit) | set(held)) == 510 and not set(fit) & set(held)
    assert [int(np.sum(groups[held] == g)) for g in "abc"] == [25, 2, 100]


def test_calibration_corrects_the_device_and_nothing_else(rows_dir, tmp_path):
    cal = calibrate_rows(rows_dir, tmp_path / "cal")
    s = cal.summary
    assert s["device"] == DEVICE and s["rows_used"] == 240 == s["rows_fit"] + s["rows_heldback"]
    assert s["rows_heldback"] == 8 * 7           # a quarter of each of 8 groups (class x math), rounded down
    for cls in ("all", "gemm", "conv", "norm", "elementwise"):
        assert s["heldback"][cls]["mape_before"] > 0.3 and s["heldback"][cls]["mape_after"] < 0.04, cls
    loaded = load_predictor(tmp_path / "cal")
    assert isinstance(loaded, CalibratedPredictor) and loaded.metadata["version"].endswith("+calibrated:L4")
    ops = _ops(40, seed=7)
    l4, h100 = lookup_hardware("L4"), lookup_hardware("H100")
    base = load_predictor()
    np.testing.assert_allclose(loaded.predict_seconds(ops, l4), _measured(ops, seed=8), rtol=0.10)
    np.testing.assert_array_equal(loaded.predict_matrix(ops, [h100])[:, 0], base.predict_seconds(ops, h100))
    both = loaded.predict_matrix(ops, [h100, l4])
    np.testing.assert_allclose(both[:, 1], loaded.predict_seconds(ops, l4), rtol=1e-6)
    proxied = OpSpec("attention", "bfloat16", 4.0 * 8 * 16 * 1024 * 1024 * 64, 3e7, 1e7,
                     {"b": 8, "heads": 16, "s_q": 1024, "s_kv": 1024, "d": 64, "causal": 0, "backward": 0})
    assert loaded.predict_seconds([proxied], l4)[0] > base.predict_seconds([proxied], l4)[0] * 1.3   # via its GEMMs
    assert loaded.relative_error("gemm", l4) == s["heldback"]["gemm"]["mape_after"]
    assert loaded.relative_error("gemm", h100) == base.relative_error("gemm")
    card = (tmp_path / "cal" / "MODEL_CARD.md").read_text()
    assert "L4" in card and "240" in card and "held back" in card


def test_calibrated_folder_is_a_predictor_everywhere(rows_dir, tmp_path):
    from prenet_callbacks import PreNeTCallback
    from prenet_callbacks.projection.pricing.predictor_source import load_predictor_option

    calibrate_rows(rows_dir, tmp_path / "cal")
    assert isinstance(load_predictor_option(tmp_path / "cal"), CalibratedPredictor)
    assert isinstance(load_predictor_option(str(tmp_path / "cal" / "predictor.json")), CalibratedPredictor)
    PreNeTCallback(predictor=tmp_path / "cal")          # accepted at construction
    doc = json.loads((tmp_path / "cal" / "predictor.json").read_text())
    assert doc["format"] == "prenet-calibration" and doc["base"]["version"] == load_predictor().metadata["version"]


def test_calibration_of_another_base_is_refused_on_load(rows_dir, tmp_path):
    from prenet_callbacks.projection.pricing.predictor_source import load_predictor_option

    calibrate_rows(rows_dir, tmp_path / "cal")
    path = tmp_path / "cal" / "predictor.json"
    doc = json.loads(path.read_text())
    good = doc["base"]["sha256"]
    doc["base"]["sha256"] = "0" * 64
    path.write_text(json.dumps(doc))
    with pytest.raises(PredictorLoadError, match=r"calibration .*predictor.json: it was calibrated on predictor .*"
                                                 r"recalibrate with this version: prenet calibrate"):
        load_predictor(path)
    with pytest.raises(ValueError, match="predictor: calibration"):
        load_predictor_option(tmp_path / "cal")
    doc["base"]["sha256"] = good
    doc["fits"]["gemm"]["alpha"] = [1.0]
    path.write_text(json.dumps(doc))
    with pytest.raises(PredictorLoadError, match="corrupt calibration"):
        load_predictor(path)


def test_cli_prints_the_held_back_errors(rows_dir, tmp_path, capsys):
    assert main(["calibrate", "--rows", str(rows_dir), "--out", str(tmp_path / "cal")]) == 0
    out = capsys.readouterr().out
    assert "calibrated L4 from 240 rows (184 fitted, 56 held back)" in out and "gemm" in out
    assert main(["calibrate", "--rows", str(rows_dir), "--out", str(tmp_path / "cal2"), "--device", "NVIDIA L4",
                 "--holdout", "0"]) == 0
    assert "0 held back" in capsys.readouterr().out


def _report(rows, schema="prenet-report/2", **block):
    return {"schema": schema, "measured": {"op_samples": {"device": "cuda", "catalog_name": DEVICE, "timing": "cupti",
                                                          "rows": rows, **block}}}


def _report_rows(ops, seconds):
    return [{"op_class": op.op_class, "name": op.name, "dtype": op.dtype, "tf32": op.tf32, "flops": op.flops,
             "bytes_read": op.bytes_read, "bytes_written": op.bytes_written, "dims": op.dims, "seconds": float(t),
             "calls": 3} for op, t in zip(ops, seconds)]


def test_from_report(tmp_path, capsys):
    ops = _ops(120, seed=2)
    rows = _report_rows(ops, _measured(ops, seed=3))
    rows.append({**rows[0], "op_class": "attention", "dims": {"b": 1, "heads": 8, "s_q": 128, "s_kv": 128, "d": 64}})
    rows.append({"op_class": "gemm", "seconds": "garbage"})
    (tmp_path / "run.json").write_text(json.dumps(_report(rows)))
    cal = calibrate_report(tmp_path / "run.json", tmp_path / "cal")
    s = cal.summary
    assert s["rows_used"] == 120 and s["unparsed_rows"] == 1 and any("attention" in k for k in s["left_out"])
    assert s["heldback"]["all"]["mape_after"] < 0.05 < s["heldback"]["all"]["mape_before"]
    assert main(["calibrate", "--from-report", str(tmp_path / "run.json"), "--out", str(tmp_path / "cal3")]) == 0
    assert "calibrated L4" in capsys.readouterr().out


def _expect_error(args, tmp_path, capsys, *words):
    out = tmp_path / "never"
    assert main(["calibrate", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("prenet calibrate: error: "), err
    for word in words:
        assert word in err, (word, err)
    assert not out.exists()


def test_bad_rows_are_one_clear_error_and_nothing_is_written(rows_dir, tmp_path, capsys):
    _expect_error(["--rows", str(tmp_path / "missing")], tmp_path, capsys, "missing", "not found", "prenet collect")
    (tmp_path / "empty").mkdir()
    _expect_error(["--rows", str(tmp_path / "empty")], tmp_path, capsys, "empty", "no rows file", "prenet collect")
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "x.csv").write_bytes(b"\xff\xfe\x00garbage")
    _expect_error(["--rows", str(corrupt)], tmp_path, capsys, "x.csv", "unreadable", "prenet collect")
    (corrupt / "x.csv").write_text("a,b\n1,2\n")
    _expect_error(["--rows", str(corrupt)], tmp_path, capsys, "x.csv", "not a prenet row CSV")
    newer = tmp_path / "newer"
    newer.mkdir()
    (newer / "L4.csv").write_text("#schema=prenet-rows/9\n" + (rows_dir / "L4.csv").read_text().split("\n", 1)[1])
    _expect_error(["--rows", str(newer)], tmp_path, capsys, "L4.csv", "prenet-rows/9", "prenet-rows/1", "collect")
    _expect_error(["--rows", str(rows_dir), "--device", "T4"], tmp_path, capsys, "L4.csv", "'L4'", "'T4'", "--device")
    two = tmp_path / "two"
    two.mkdir()
    (two / "L4.csv").write_text((rows_dir / "L4.csv").read_text())
    ops = _ops(20)
    write_rows(two / "T4.csv", [Sample(op, "Tesla T4", 1e-4, "collect") for op in ops])
    _expect_error(["--rows", str(two)], tmp_path, capsys, "2 devices", "L4 (L4.csv)", "T4 (T4.csv)", "--device")
    few = tmp_path / "few"
    few.mkdir()
    write_rows(few / "L4.csv", [Sample(op, "L4", 1e-4, "collect") for op in ops[:5]])
    _expect_error(["--rows", str(few)], tmp_path, capsys, "5 usable rows", "prenet collect")
    unknown = tmp_path / "unknown"
    unknown.mkdir()
    write_rows(unknown / "x.csv", [Sample(op, "NVIDIA Imaginary Z9", 1e-4, "collect") for op in ops])
    _expect_error(["--rows", str(unknown)], tmp_path, capsys, "Imaginary Z9", "--catalog FILE", "hardware.toml")
    _expect_error(["--rows", str(rows_dir), "--holdout", "1.5"], tmp_path, capsys, "--holdout")


def test_rows_of_a_gpu_the_catalog_lacks_use_the_collected_override(tmp_path):
    from predictor_models.hardware.detected import detected_accelerator, to_toml

    entry = detected_accelerator("NVIDIA Imaginary Z9", {"sm_count": 80, "major": 8, "minor": 9,
                                                         "memory_bytes": 48 * 2**30, "memory_clock_mhz": 10001,
                                                         "bus_width_bits": 384, "clock_mhz": 2400})
    folder = tmp_path / "rows"
    folder.mkdir()
    (folder / "hardware.toml").write_text(to_toml(entry))
    ops = _ops(80)
    times = load_predictor().predict_seconds(ops, entry) * 1.7
    write_rows(folder / "z9.csv", [Sample(op, entry.name, t, "collect") for op, t in zip(ops, times)])
    cal = calibrate_rows(folder, tmp_path / "cal")
    assert cal.summary["device"] == entry.name and cal.summary["heldback"]["all"]["mape_after"] < 0.02
    np.testing.assert_allclose(load_predictor(tmp_path / "cal").predict_seconds(ops[:5], entry), times[:5], rtol=0.02)


def test_bad_reports_are_one_clear_error(tmp_path, capsys):
    path = tmp_path / "run.json"
    _expect_error(["--from-report", str(path)], tmp_path, capsys, "run.json", "not found")
    path.write_text("{not json")
    _expect_error(["--from-report", str(path)], tmp_path, capsys, "run.json", "not a readable JSON report")
    path.write_text(json.dumps({"schema": "prenet-report/1", "measured": {}}))
    _expect_error(["--from-report", str(path)], tmp_path, capsys, "prenet-report/1", "prenet-report/2", "--rows DIR")
    path.write_text(json.dumps({"schema": "prenet-report/2", "measured": {"op_samples": None}}))
    _expect_error(["--from-report", str(path)], tmp_path, capsys, "no measured.op_samples", "prenet collect")
    ops = _ops(40)
    path.write_text(json.dumps(_report(_report_rows(ops, _measured(ops)))))
    _expect_error(["--from-report", str(path), "--device", "A100"], tmp_path, capsys, "'L4'", "A100", "--device")
    with pytest.raises(CalibrationError):
        calibrate_report(path, device="H100")


def test_train_extra_rows_of_a_detected_gpu_need_its_override(tmp_path):
    from predictor_models.hardware.detected import detected_accelerator, to_toml
    from predictor_models.train import TrainError, extra_lookup

    folder = tmp_path / "rows"
    folder.mkdir()
    with pytest.raises(TrainError, match="'NVIDIA Imaginary Q1'.*hardware.toml"):
        extra_lookup([str(folder)], {"NVIDIA Imaginary Q1", "L4"})
    entry = detected_accelerator("NVIDIA Imaginary Q1", {"sm_count": 70, "major": 8, "minor": 6, "memory_bytes": 2**35,
                                                         "memory_clock_mhz": 9001, "bus_width_bits": 256})
    (folder / "hardware.toml").write_text(to_toml(entry))
    lookup = extra_lookup([str(folder)], {"NVIDIA Imaginary Q1", "L4"})
    assert lookup("NVIDIA Imaginary Q1").sm_count == 70 and lookup("NVIDIA L4").name == "L4"
