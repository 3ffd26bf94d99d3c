"""Rows of tensor/pipeline-parallel targets: what they carry, memory per rank, refusals and fall-backs."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import jsonschema
import pytest
import torch
from torch import nn

from layout_models import ids, tiny_lm
from prenet_callbacks import estimate
from prenet_callbacks.projection import project_report
from prenet_callbacks.projection.rows.memory import FRAGMENTATION
from prenet_callbacks.projection.parallel.pipeline import layer_activation_bytes
from prenet_callbacks.report import Report
from tests.projection_fixtures import ScaledBound, make_report

PREDICTOR = ScaledBound()
SCHEMA = json.loads((Path(__file__).parents[1] / "prenet_callbacks/schemas/prenet-report-2.schema.json").read_text())


def _estimate(targets, **kw):
    return estimate(tiny_lm(layers=4, heads=8), ids(4, 16), targets=targets, predictor=PREDICTOR,
                    precision="bf16-mixed", **kw)


def test_rows_carry_their_layout_and_the_pipeline_pays_its_bubble():
    est = _estimate(["8x H100", "8x H100 tp=8", "8x H100 pp=4 tp=2", "8x H100 pp=4 tp=2 microbatches=8"])
    plain, tp, pp1, pp8 = (est.row(t) for t in ("8x H100", "8x H100 tp=8", "8x H100 pp=4 tp=2",
                                                "8x H100 pp=4 tp=2 microbatches=8"))
    assert "layout" not in plain
    assert tp["label"] == "8x H100-SXM5 tp=8" and tp["devices"] == 8
    assert {k: tp["layout"][k] for k in ("tp", "pp", "dp", "applied", "source")} == \
        {"tp": 8, "pp": 1, "dp": 1, "applied": True, "source": "target"}
    assert tp["layout"]["bubble_share"] == 0.0 and tp["layout"]["tp_comm_s"] > 0
    assert tp["global_batch"] == 4                # one replica of 8 GPUs takes the captured batch
    assert pp1["layout"]["stage_layers"] == [1, 1, 1, 1]
    assert pp1["layout"]["bubble_share"] == pytest.approx(3 / 4, abs=0.05)   # one micro-batch: (p-1)/(m+p-1)
    assert any("1 micro-batch(es) for 4 pipeline stages" in n for n in pp1["notes"])
    assert pp8["layout"]["bubble_share"] == pytest.approx(3 / 11, abs=0.05)
    assert pp8["global_batch"] == 4 * 8 and pp8["steps"] is None
    assert tp["method"] == "absolute + tp/pp + collective model"


def test_memory_per_rank_follows_the_published_formula():
    est = _estimate(["8x H100 tp=8"])
    row = est.row("8x H100 tp=8")
    layout = row["layout"]
    # SDPA runs flash on an H100 in bf16: no score matrix; 4 layers, b=4, s=16, h=64, 8 heads, MLP 4h
    per_layer = layer_activation_bytes(seq=16, batch=4, hidden=64, heads=8, tp=8, score_matrix=False)
    assert layout["memory"]["per_layer_mib"] == pytest.approx(per_layer / 2**20, abs=0.01)
    head = 4 * 16 * 128 / 8 * (2 + 4)                     # logits + fp32 log-probabilities, vocabulary / tp
    activations = 4 * per_layer + head
    assert layout["memory"]["activations_gib"] == pytest.approx(activations / 2**30, abs=1e-3)
    params = est.workload.params * layout["param_share"]
    state = params * (4 + 4 + 8)                          # bf16-mixed: fp32 weights, grads, Adam's two states
    assert row["memory_gib"] == pytest.approx((state + activations) * FRAGMENTATION / 2**30, abs=0.01)
    assert layout["param_share"] == pytest.approx(1 / 8, rel=0.01)


def test_sequence_parallelism_shrinks_memory_and_changes_the_collectives():
    est = _estimate(["8x H100 tp=8", "8x H100 tp=8 sp"])
    plain, sp = est.row("8x H100 tp=8"), est.row("8x H100 tp=8 sp")
    assert sp["layout"]["memory"]["per_layer_mib"] < plain["layout"]["memory"]["per_layer_mib"]
    assert "reduce-scatter + all-gather" in sp["communication"] and "all-reduce per layer" in plain["communication"]


def test_a_layout_the_model_cannot_run_is_refused_by_estimate_with_the_reason():
    with pytest.raises(ValueError, match="tp=16 is more than the model's 8 attention heads"):
        _estimate(["2x8 H100 tp=16"])
    with pytest.raises(ValueError, match="pp=8 is more stages than the model's 4 layers"):
        _estimate(["8x H100 pp=8"])
    with pytest.raises(ValueError, match="global_batch=6 is not a multiple"):
        _estimate(["8x H100 tp=8 global_batch=6"])


def test_a_model_that_is_no_transformer_falls_back_to_data_parallel_with_a_note():
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64))
    est = estimate(model, torch.empty(32, 64, device="meta"), targets=["8x H100", "8x H100 tp=8"], predictor=PREDICTOR)
    plain, fallback = est.row("8x H100"), est.row("8x H100 tp=8")
    assert fallback["label"] == "8x H100-SXM5 tp=8"
    assert fallback["layout"]["applied"] is False and "no attention" in fallback["layout"]["reason"]
    assert "projected as data parallel over 8 GPUs" in fallback["notes"][0]
    assert fallback["step_s"] == plain["step_s"]


def test_a_report_projects_layouts_too_and_notes_the_ones_it_cannot_run():
    report = make_report()       # four linear layers measured on an A100: no transformer
    rows = project_report(report, ["8x H100", "8x H100 tp=8", "8x H100 tp=8 global_batch=100"])
    labels = [row["label"] for row in rows]
    assert labels == ["A100-SXM4-80GB", "8x H100-SXM5", "8x H100-SXM5 tp=8"]
    assert rows[-1]["layout"]["applied"] is False
    assert any("not projected: 8x H100-SXM5 tp=8 global_batch=100: global_batch=100 is not a multiple of "
               "micro-batch 32" in note for note in report.projection["notes"])


class _RecordedProfiler:
    """A profiler that hands the session a layer table measured beforehand (a real CPU step of a tiny GPT)."""

    def __init__(self, table) -> None:
        self.table = table
        self.limitations: list[str] = []

    def __getattr__(self, name):
        if name in ("start", "resume", "suspend", "end_step", "begin_phase"):
            return lambda *a: None
        raise AttributeError(name)

    def stop(self):
        return self.table


def _profiled_tiny_gpt():
    from layout_models import TinyLM
    from prenet_callbacks.measure.profiling import ModuleProfiler

    torch.manual_seed(0)
    model = TinyLM(layers=2, heads=4)
    batch = torch.randint(0, 128, (2, 16))
    optimizer = torch.optim.AdamW(model.parameters())
    profiler = ModuleProfiler(model)
    profiler.start()
    for _ in range(2):
        profiler.begin_phase("forward")
        loss = model(batch).float().logsumexp(-1).mean()
        profiler.begin_phase("backward")
        loss.backward()
        profiler.begin_phase("optimizer")
        optimizer.step()
        optimizer.zero_grad()
        profiler.end_step()
    return profiler.stop()


@pytest.fixture(scope="module")
def session_report():
    """A fake-clock session whose layer table is a real CPU step of a tiny GPT (2 layers, 4 heads)."""
    from test_session import FakeClock, _train, plan

    from prenet_callbacks.session.machine import PredictionSession, SessionConfig

    clock = FakeClock()
    config = SessionConfig(warmup_steps=1, profile_steps=2, timing_steps=3, predictor=PREDICTOR,
                           targets=["2x H100", "2x H100 tp=2", "4x H100 tp=2 pp=2 microbatches=4", "8x H100 tp=8"])
    session = PredictionSession(config, clock=clock)
    session.fit_start({"device": "cpu", "name": "Some CPU", "devices": 1, "precision": "32-true"})
    session.set_plan(plan(checkpoints=[]))
    session.attach_profiler(_RecordedProfiler(_profiled_tiny_gpt()))
    session.train_epoch_start()
    _train(session, clock, steps=12, forward_s=lambda profiled: 0.2)
    assert not session.guard.disabled
    return session.report


def test_a_fake_clock_callback_run_carries_the_layout_into_its_rows(session_report):
    rows = {row["label"]: row for row in session_report.targets}
    assert set(rows) == {"Some CPU", "2x H100-SXM5", "2x H100-SXM5 tp=2", "4x H100-SXM5 tp=2 pp=2 microbatches=4"}
    assert "layout" not in rows["2x H100-SXM5"]
    tp = rows["2x H100-SXM5 tp=2"]["layout"]
    assert (tp["tp"], tp["pp"], tp["applied"], tp["layers"]) == (2, 1, True, 2)
    pp = rows["4x H100-SXM5 tp=2 pp=2 microbatches=4"]["layout"]
    assert (pp["pp"], pp["microbatches"], pp["stage_layers"]) == (2, 4, [1, 1])
    assert pp["bubble_share"] > 0
    assert all(row["step_s"] > 0 for row in rows.values())
    # the run never breaks: a layout its model cannot run is left out, and the notes say why
    assert any("not projected: 8x H100-SXM5 tp=8: tp=8 is more than the model's 4 attention heads" in note
               for note in session_report.projection["notes"])
    data = session_report.to_dict()
    assert data["schema"] == "prenet-report/2.1"
    jsonschema.validate(data, SCHEMA)
    assert Report.from_dict(data).to_dict()["targets"] == data["targets"]


def test_prenet_report_refuses_a_layout_the_run_cannot_run(session_report, tmp_path, capsys):
    from prenet_callbacks.cli import main

    path = session_report.save(tmp_path / "run.json")
    assert main(["report", str(path), "--targets", "8x H100 tp=8"]) == 2
    assert "tp=8 is more than the model's 4 attention heads" in capsys.readouterr().err
    assert main(["report", str(path), "--targets", "2x8 H100 tp=4 pp=2 microbatches=8"]) == 0
    assert "2x8 H100-SXM5 tp=4" in capsys.readouterr().out


def test_interleaving_shrinks_the_bubble_and_zero_shards_the_optimizer_over_dp():
    def rows(**kw):
        est = estimate(tiny_lm(layers=8, heads=8, hidden=1024, ffn=4096), ids(4, 16), predictor=PREDICTOR,
                       precision="bf16-mixed",
                       targets=["2x8 H100 tp=2 pp=4 microbatches=8", "2x8 H100 tp=2 pp=4 microbatches=8 interleaved=2"],
                       **kw)
        return est.rows

    plain, interleaved = rows()
    assert interleaved["layout"]["bubble_share"] < plain["layout"]["bubble_share"]
    assert interleaved["layout"]["pp_comm_s"] == pytest.approx(2 * plain["layout"]["pp_comm_s"], rel=1e-3)   # 2x the sends
    zero1, _ = rows(sharding="zero1")
    assert zero1["memory_gib"] < plain["memory_gib"] and "ZeRO-1" in zero1["communication"]
    assert zero1["layout"]["dp"] == 2 and zero1["layout"]["dp_comm_s"] > 0


def test_targets_sharing_a_layout_are_priced_together_as_if_alone():
    """One rank step and one pricing call serve the same layout on several GPUs; each row is what it is alone."""
    together = _estimate(["8x H100 tp=4 pp=2", "8x A100 tp=4 pp=2", "8x H100 tp=8"])
    for target in ("8x H100 tp=4 pp=2", "8x A100 tp=4 pp=2", "8x H100 tp=8"):
        alone = _estimate([target]).row(target)
        row = together.row(target)
        assert row["step_s"] == pytest.approx(alone["step_s"], rel=1e-9)
        assert row["layout"] == alone["layout"] and row["memory_gib"] == alone["memory_gib"]


def test_an_anchored_run_cuts_its_recorded_step_once_for_every_split(monkeypatch):
    """A measured run's layout targets with different tp share the recorded step's cut by category (tp=1); each
    row is what it is alone."""
    from benchmarks.projection_speed import synthetic_report
    from prenet_callbacks.projection import project_report
    from prenet_callbacks.projection.parallel import layout_workload

    targets = ["8x H100 tp=8", "8x H100 tp=4", "8x A100 tp=2 pp=2", "2x8 H100 tp=8 pp=2"]
    whole_cuts = []
    split = layout_workload.split_units

    def counted(units, shape, tp, sp, *walked):
        if tp == 1:
            whole_cuts.append(shape)
        return split(units, shape, tp, sp, *walked)

    monkeypatch.setattr(layout_workload, "split_units", counted)
    together = {row["name"] + str(row.get("layout")): row for row in project_report(synthetic_report(8), targets)}
    assert len(whole_cuts) == len(set(whole_cuts)) >= 1     # once per model shape, not once per split
    for target in targets:
        alone = [row for row in project_report(synthetic_report(8), [target]) if not row.get("current")][0]
        row = together[alone["name"] + str(alone.get("layout"))]
        assert row["step_s"] == pytest.approx(alone["step_s"], rel=1e-12) and row["layout"] == alone["layout"]


def test_a_ranks_views_built_on_its_splits_are_those_of_its_own_units():
    """Ranks of one split share its flat view and per-unit views (phases, measured seconds) and add their optimizer
    units: what they hold is what their own units give."""
    import numpy as np

    from benchmarks.projection_speed import synthetic_report
    from prenet_callbacks.projection.from_report import workload_from_report
    from prenet_callbacks.projection.ops.flat import flatten
    from prenet_callbacks.projection.ops.workload import unit_views
    from prenet_callbacks.projection.parallel.layout_workload import micro_batches, rank_step
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor
    from prenet_callbacks.projection.targets import parse_projection_target

    workload = workload_from_report(synthetic_report(8))
    cache: dict = {}
    ranks = []
    for text in ("2x8 H100 tp=8 pp=2", "8x H100 tp=8"):
        layout = parse_projection_target(text).layout
        ranks.append(rank_step(workload, layout, micro_batches(workload, layout, "per_device"), default_predictor()[0],
                               cache))
    assert ranks[0].workload.units[0] is ranks[1].workload.units[0]   # one split, two ranks
    for rank in ranks:
        step = rank.workload
        own = unit_views(step.units)
        for shared, fresh in zip(step.views(), own):
            np.testing.assert_array_equal(shared, fresh)
        assert step.flat().specs == flatten(step.units).specs
        assert len(step.units) > len(ranks[0].workload.units) // 2 > 0 and step.phase_index()[-1] == 2   # its optimizer


def test_a_measured_units_time_goes_whole_to_one_piece_and_shared_among_several():
    """Anchored ranks: each recorded unit's measured time is shared among the pieces its category cut makes (by
    the anchor's predictions), and kept whole, exactly, where the cut makes one piece; the micro-batch of a run
    without accumulation is the run's own units."""
    import numpy as np

    from benchmarks.projection_speed import synthetic_report
    from prenet_callbacks.projection.from_report import workload_from_report
    from prenet_callbacks.projection.ops.flat import flatten
    from prenet_callbacks.projection.parallel import layout_workload
    from prenet_callbacks.projection.parallel.tensor_split import split_units
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor
    from prenet_callbacks.projection.targets import parse_projection_target

    predictor, _ = default_predictor()
    report = synthetic_report(35)   # its layers' widths cycle over 35: a shape from 35 on
    report.measured["layers"]["layers"][0]["ops"].insert(0,   # the first block also looks up embeddings ("pre")
        {"name": "aten::embedding", "phase": "fwd", "count_per_step": 1.0, "seconds_per_step": 1e-5,
         "spec": {"op_class": "embedding", "dtype": "bfloat16", "flops": 0.0, "bytes_read": 8e6,
                  "bytes_written": 8e6, "dims": {"vocab": 32000, "rows": 4096, "cols": 1024}, "tf32": False}})
    workload = workload_from_report(report)
    micro = layout_workload._per_micro_batch(workload.units, 1.0, 1.0)
    assert all(a is b for a, b in zip(micro, [u for u in workload.units if u.phase != "opt"]))
    target = parse_projection_target("8x H100 tp=4")
    mb = layout_workload.micro_batches(workload, target.layout, "per_device")
    shape, _ = layout_workload.model_shape(workload)
    split = split_units(micro, shape, 4, False)
    pieces, pieces_flat = layout_workload._measured_units(workload, split.source, split.category, shape, 1.0,
                                                          predictor)
    assert mb.count == 1 and len(pieces) == len(split.units)
    # their flat view, made from the recorded cut's pieces, is theirs
    made, walked = pieces_flat(), flatten(pieces)
    assert made.specs == walked.specs and all(a is b for a, b in zip(made.specs, walked.specs))
    for name in ("unit_of", "op_of", "counts"):
        np.testing.assert_array_equal(getattr(made, name), getattr(walked, name))
    counts = Counter(split.source)
    assert max(counts.values()) > 1   # a unit cut in two: its time is shared
    for source, n in counts.items():
        own = [p.measured_s for p, s in zip(pieces, split.source) if s == source]
        measured = micro[source].measured_s
        if n == 1:
            assert own == [measured]
        else:
            assert sum(own) == pytest.approx(measured, rel=1e-12) and all(0 < t < measured for t in own)


def test_the_speed_benchmarks_uniform_stack_is_one_transformer_shape():
    """`projection_speed.py --uniform`: every layer one shape, recognised as a transformer (its layouts are priced)."""
    from benchmarks.projection_speed import synthetic_report
    from prenet_callbacks.projection.from_report import workload_from_report
    from prenet_callbacks.projection.parallel import layout_workload

    report = synthetic_report(6, uniform=True)
    dims = {tuple(op["spec"]["dims"].items()) for row in report.measured["layers"]["layers"][:-1]
            for op in row["ops"] if op["spec"]["op_class"] == "gemm"}
    assert len(dims) == 1
    shape, reason = layout_workload.model_shape(workload_from_report(report))
    assert reason is None and (shape.hidden, shape.tokens, shape.layers) == (1024, 4096, 6)


def test_a_ranks_categories_are_simulated_each_on_its_own_units() -> None:
    """`_simulated` prices the four categories in one call; each column must equal that category's units alone."""
    import numpy as np
    from types import SimpleNamespace

    from prenet_callbacks.projection.pricing.host import HOST_ERROR, simulate_band
    from prenet_callbacks.projection.rows.layout_rows import _simulated

    rng = np.random.default_rng(3)
    for categories in ([1, 0, 1, 1, 2, 1, 3, 1, 0], [1, 1, 1], [], [3, 2, 2, 0, 0, 0, 0, 0]):
        category = np.array(categories, dtype=int)
        host, device = rng.random(len(category)) * 1e-3, rng.random(len(category)) * 2e-3
        kernels = rng.integers(0, 5, len(category)).astype(float)
        got = _simulated(SimpleNamespace(category=category), host, device, kernels, 0.2)
        for c in range(4):
            units = category == c
            alone = simulate_band(host[units, None], device[units, None], kernels[units],
                                  np.array([1.0, 1.0 - HOST_ERROR, 1.0 + HOST_ERROR]), np.array([[1.0, 0.8, 1.2]]))[0]
            np.testing.assert_array_equal(got[:, c], alone)
