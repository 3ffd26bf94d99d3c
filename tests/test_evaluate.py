"""`predictor_models.evaluate`: leave-one-GPU-out folds, their summary and the model-card table,
on a small synthetic data set (three catalog GPUs, GEMMs whose time depends on shape and device)."""
import numpy as np
import pytest

from predictor_models.datasets.common import Sample, gemm_op
from predictor_models.evaluate import _mape, _time_weighted, evaluate_folds, summarise
from predictor_models.hardware import lookup_hardware
from predictor_models.predictor.card import heldout_table
from predictor_models.predictor.training import build_training_set

GPUS = {"T4": 1.0, "V100-PCIe-32GB": 1.3, "A100-PCIe-40GB": 1.6}   # device-specific slowness over the bound


def synthetic_set():
    rng = np.random.default_rng(0)
    samples = []
    for gpu, slowness in GPUS.items():
        device = lookup_hardware(gpu)
        peak = device.peak_flops("float32")
        for _ in range(260):
            m, n, k = (int(2 ** rng.uniform(6, 12)) for _ in range(3))
            op = gemm_op(1, m, n, k, "float32")
            bound = max(op.flops / peak, (op.bytes_read + op.bytes_written) / (device.memory_bandwidth_gbs * 1e9))
            seconds = (bound + 2e-6) * slowness * (1.2 + 0.5 * (k < 256)) * rng.uniform(0.97, 1.03)
            samples.append(Sample(op, gpu, seconds, "synthetic"))
    return build_training_set(samples, lookup_hardware)


@pytest.fixture(scope="module")
def folds():
    return evaluate_folds(synthetic_set(), members=1, log=lambda *_: None)


def test_time_weighted_error_weighs_ops_by_their_time():
    pred, true = np.array([2.0, 30.0]), np.array([1.0, 20.0])
    assert _mape(pred, true) == pytest.approx(0.75)            # the 1 s op, 100% off, counts as much as the 20 s op
    assert _time_weighted(pred, true) == pytest.approx(11 / 21)  # here by the time each takes


def test_each_gpu_is_held_out_once_and_scored_beside_the_baseline(folds):
    rows, models = folds
    assert sorted(r["gpu"] for r in rows) == sorted(GPUS)
    assert set(models) == set(GPUS)
    for r in rows:
        assert r["op"] == "gemm" and r["n"] == 260
        for key in ("mape", "time_weighted", "baseline_mape", "baseline_time_weighted", "bound_only_mape"):
            assert np.isfinite(r[key]) and r[key] >= 0, (key, r)
        assert models[r["gpu"]].metadata["heldout_gpu"] == r["gpu"]
    # the V100's slowness lies between the two GPUs it is learnt from: the learnt utilisation must
    # beat the bare bound there (the outer two are extrapolations, where it need not)
    v100 = next(r for r in rows if r["gpu"] == "V100-PCIe-32GB")
    assert v100["mape"] < 0.5 * v100["bound_only_mape"]


def test_summary_aggregates_the_folds(folds):
    rows, _ = folds
    summary = summarise(rows)
    gemm = summary["by_class"]["gemm"]
    assert gemm["n"] == 3 * 260
    assert gemm["mape"] == pytest.approx(np.mean([r["mape"] for r in rows]))            # equal n: weighted = mean
    assert gemm["gpu_mean_time_weighted"] == pytest.approx(np.mean([r["time_weighted"] for r in rows]))
    assert summary["mape"] == pytest.approx(gemm["mape"])


def test_card_table_lists_every_fold_with_both_error_measures(folds):
    rows, _ = folds
    table = heldout_table({"heldout": rows, "summary": summarise(rows), "transformer_layers": []})
    for gpu in GPUS:
        assert f"| gemm | {gpu} | 260 |" in table
    assert "time-weighted" in table and "| **all** |" in table


def test_weight_decay_override_reaches_the_fitted_models(folds):
    rows, models = folds
    heavy_rows, heavy = evaluate_folds(synthetic_set(), gpus=["V100-PCIe-32GB"], members=1, baseline=False,
                                       weight_decay={"gemm": 100.0}, log=lambda *_: None)
    default_w = np.abs(models["V100-PCIe-32GB"].models["gemm"][0]["layers"][0][0]).sum()
    heavy_w = np.abs(heavy["V100-PCIe-32GB"].models["gemm"][0]["layers"][0][0]).sum()
    assert heavy_w < 0.5 * default_w          # a strong L2 penalty shrinks the first layer's weights
    assert "baseline_mape" not in heavy_rows[0]


def test_rows_that_train_only_the_network_are_not_scored_as_class_rows():
    """DeepBench's kernels train the tiled-kernel network alone (`NETWORK_ONLY_SOURCES`): scoring the class models on
    them measured rows they never learn from and the shipped predictor does not price with them."""
    plain = synthetic_set()
    extra = [Sample(s.op, s.device, s.seconds * 3.0, "deepbench") for s in plain.samples[:300]]
    mixed = build_training_set(list(plain.samples) + extra, lookup_hardware)
    rows, _ = evaluate_folds(mixed, members=1, baseline=False, log=lambda *_: None)
    alone, _ = evaluate_folds(plain, members=1, baseline=False, log=lambda *_: None)
    assert [(r["gpu"], r["n"], r["mape"]) for r in rows] == [(r["gpu"], r["n"], r["mape"]) for r in alone]
    assert all(set(r["by_source"]) == {"synthetic"} for r in rows)


def test_the_shipped_score_is_the_fold_predictor_s_own_prediction_split_by_precision(folds):
    """``shipped_mape`` scores what a projection prices (`predict_matrix`: expansion, ladder, envelope) with the
    fold's models, on the GPU the fold never saw; the precision split holds every row once."""
    rows, models = folds
    data = synthetic_set()
    for r in rows:
        held = data.take(np.flatnonzero(data.gpu == r["gpu"]))
        priced = models[r["gpu"]].predict_matrix([s.op for s in held.samples], [lookup_hardware(r["gpu"])])[:, 0]
        assert r["shipped_mape"] == pytest.approx(_mape(priced, held.seconds))
        assert r["shipped_time_weighted"] == pytest.approx(_time_weighted(priced, held.seconds))
        assert set(r["by_precision"]) == {"fp32"} and r["by_precision"]["fp32"]["n"] == r["n"]
        assert r["by_precision"]["fp32"]["shipped_mape"] == pytest.approx(r["shipped_mape"])
    summary = summarise(rows)
    assert summary["by_precision"]["fp32"]["all"]["n"] == 3 * 260
    assert summary["by_precision"]["fp32"]["gemm"]["shipped_mape"] == pytest.approx(summary["by_class"]["gemm"]["shipped_mape"])
    assert summary["shipped_mape"] == pytest.approx(np.mean([r["shipped_mape"] for r in rows]))


def test_the_card_gives_the_bands_the_shipped_error(folds, tmp_path):
    """`heldout_errors.json` feeds each class's band (`Predictor.relative_error`): the error of what ships."""
    import json

    from predictor_models.predictor.card import write_card

    rows, _ = folds
    result = {"heldout": rows, "summary": summarise(rows), "transformer_layers": []}
    write_card(tmp_path, result)
    written = json.loads((tmp_path / "heldout_errors.json").read_text())
    assert written["by_class"]["gemm"] == pytest.approx(result["summary"]["by_class"]["gemm"]["shipped_mape"])
    assert written["by_class_model_alone"]["gemm"] == pytest.approx(result["summary"]["by_class"]["gemm"]["mape"])
    card = (tmp_path / "MODEL_CARD.md").read_text()
    assert "ours as shipped" in card and "| fp32 | **all** |" in card


def test_the_shipped_errors_are_the_committed_evaluation_s():
    """`heldout_errors.json` (each class's band) is what `evaluate --update-card` derives from `heldout_eval.json`."""
    import json
    from pathlib import Path

    from predictor_models.predictor.card import shipped_errors

    folder = Path(__file__).resolve().parent.parent / "predictor_models/pretrained"
    evaluation = json.loads((folder / "heldout_eval.json").read_text())
    errors = json.loads((folder / "heldout_errors.json").read_text())
    assert errors["by_class"] == shipped_errors(evaluation["summary"])
    assert errors["summary"]["shipped_mape"] == evaluation["summary"]["shipped_mape"]
