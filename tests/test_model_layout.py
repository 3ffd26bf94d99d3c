"""Tensor/pipeline layouts in target names, the pipeline schedule and the activation formulas."""
from __future__ import annotations

import pytest

from prenet_callbacks.projection.parallel.model_layout import bubble_share, check_against_model
from prenet_callbacks.projection.parallel.pipeline import in_flight, layer_activation_bytes, pipeline_time, stage_layers
from prenet_callbacks.projection.targets import parse_projection_target, resolve_targets, target_names


@pytest.mark.parametrize("text,label,degrees", [
    ("8x H100 tp=8", "8x H100-SXM5 tp=8", (8, 1, 1, False)),
    ("4x8 H100 tp=8 pp=4", "4x8 H100-SXM5 tp=8 pp=4", (8, 4, 1, False)),
    ("2x8 A100 tp=4 pp=2 dp=2 sp", "2x8 A100-SXM4-80GB tp=4 pp=2 dp=2 sp", (4, 2, 2, True)),
    ("2x8 H100 tp=8", "2x8 H100-SXM5 tp=8 dp=2", (8, 1, 2, False)),
    ("16x H100 tp=8 pp=2", "2x8 H100-SXM5 tp=8 pp=2", (8, 2, 1, False)),           # 16x read as 2 nodes of 8
    ("2x8 H100 @ 200G pp=2 tp=8", "2x8 H100-SXM5 @ 200G tp=8 pp=2", (8, 2, 1, False)),
])
def test_layouts_parse_with_the_hardware(text, label, degrees):
    target = parse_projection_target(text)
    layout = target.layout
    assert target.label == label
    assert (layout.tp, layout.pp, layout.dp, layout.sp) == degrees
    assert layout.tp * layout.pp * layout.dp == target.count
    again = parse_projection_target(label)                  # the label reads back as the same target
    assert (again.label, again.layout, again.count) == (label, layout, target.count)


def test_microbatches_and_schedules():
    layout = parse_projection_target("4x8 H100 tp=8 pp=4 microbatches=16 interleaved=3").layout
    assert (layout.microbatches, layout.schedule, layout.virtual_stages) == (16, "interleaved", 3)
    assert parse_projection_target("4x8 H100 tp=8 pp=4 interleaved").layout.virtual_stages == 2
    assert parse_projection_target("4x8 H100 tp=8 pp=4 1f1b").layout.schedule == "1f1b"
    assert parse_projection_target("4x8 H100 tp=8 pp=4 global_batch=512").layout.global_batch == 512


def test_data_parallel_alone_is_the_plain_target():
    assert parse_projection_target("4x H100 dp=4") == parse_projection_target("4x H100")


def test_targets_differing_only_in_layout_are_kept_apart():
    labels = [t.label for t in resolve_targets(["8x H100", "8x H100 tp=8", "8x H100 tp=4", "8x H100 tp=8"])]
    assert labels == ["8x H100-SXM5", "8x H100-SXM5 tp=8", "8x H100-SXM5 tp=4 dp=2"]


@pytest.mark.parametrize("text,words", [
    ("8x H100 tp=3", ["tp x pp = 3 x 1 = 3 does not divide the target's 8 GPUs"]),
    ("8x H100 tp=4 dp=4", ["tp x pp x dp = 4 x 1 x 4 = 16", "8 GPUs", "dp=2"]),
    ("4x8 H100 tp=8 pp=2 dp=3", ["= 48", "32 GPUs"]),
    ("H100 tp=2", ["does not divide the target's 1 GPUs"]),
    ("8x H100 sp", ["'sp'", "add tp=N"]),
    ("8x H100 tp=8 interleaved", ["pipeline stages", "pp=N"]),
    ("8x H100 tp=8 tp=4", ["given twice"]),
    ("8x H100 pp=2 1f1b interleaved", ["choose one schedule"]),
    ("8x H100 pp=2 microbatches=4 global_batch=64", ["not both"]),
    ("8x H100 pp=2 interleaved=1", ["interleaved=2"]),
    ("8x H100 tp=0", ["at least 1"]),
    ("4x H100 microbatches=4", ["go with tp= or pp="]),
    ("tp=8 pp=2", ["names no hardware"]),
])
def test_impossible_layouts_are_refused_with_the_reason(text, words):
    with pytest.raises(ValueError) as error:
        target_names([text])
    message = str(error.value)
    assert message.startswith("targets: ") and text in message
    for word in words:
        assert word in message


@pytest.mark.parametrize("degrees,reason", [
    (dict(tp=5), "does not divide the model's 12 attention heads"),
    (dict(tp=16), "more than the model's 12 attention heads"),
    (dict(pp=13), "more stages than the model's 12 layers"),
    (dict(pp=4, virtual_stages=4), "16 model chunks is more than the model's 12 layers"),
])
def test_layouts_the_model_cannot_run_say_why(degrees, reason):
    from prenet_callbacks.projection.parallel.model_layout import ModelLayout

    assert reason in check_against_model(ModelLayout(**degrees), heads=12, hidden=768, layers=12)
    assert check_against_model(ModelLayout(tp=4, pp=4), heads=12, hidden=768, layers=12) is None
    assert "hidden size 771" in check_against_model(ModelLayout(tp=2), heads=2, hidden=771, layers=2)


# ------------------------------------------------------------------------------------------ schedule
@pytest.mark.parametrize("pp,m,v,share", [(1, 8, 1, 0.0), (4, 8, 1, 3 / 11), (4, 1, 1, 3 / 4), (8, 64, 1, 7 / 71),
                                          (4, 8, 2, 3 / 19), (8, 16, 4, 7 / 71)])
def test_bubble_formula(pp, m, v, share):
    assert bubble_share(pp, m, v) == pytest.approx(share)
    # the schedule with equal stages idles exactly that share
    piped = pipeline_time([0.25] * pp, m, v)
    assert piped.bubble_share == pytest.approx(share)
    assert piped.seconds == pytest.approx(0.25 * (m + (pp - 1) / v))


def test_unequal_stages_wait_for_the_slowest():
    piped = pipeline_time([1.0, 1.0, 1.0, 1.5], microbatches=8)
    assert piped.seconds == pytest.approx(7 * 1.5 + 4.5)          # (m - 1) max + sum
    assert piped.bubble_s == pytest.approx(3.0)
    assert stage_layers(10, 4) == [3, 3, 2, 2] and stage_layers(8, 4) == [2, 2, 2, 2]


def test_in_flight_micro_batches():
    assert in_flight(1, 16) == 1.0
    assert in_flight(4, 16) == 4.0 and in_flight(4, 2) == 2.0
    assert in_flight(4, 16, 2) == pytest.approx(4 * (1 + 3 / 8))


# ------------------------------------------------------------------------------------------ memory
S, B, H, A = 2048, 2, 4096, 32


def _sbh(factor: float) -> float:
    return S * B * H * factor


@pytest.mark.parametrize("kw,expected", [
    (dict(), _sbh(34 + 5 * A * S / H)),                                        # no parallelism
    (dict(tp=8), _sbh(10 + 24 / 8 + 5 * A * S / (H * 8))),                     # tensor parallel
    (dict(tp=8, sp=True), _sbh(34 / 8 + 5 * A * S / (H * 8))),                 # + sequence parallel
    (dict(tp=8, recompute="selective"), _sbh(10 + 24 / 8)),                    # + selective recompute
    (dict(tp=8, sp=True, recompute="selective"), _sbh(34 / 8)),
    (dict(recompute="full"), _sbh(2)),                                         # full recompute: the input
    (dict(tp=8, sp=True, recompute="full"), _sbh(2 / 8)),
    (dict(tp=8, score_matrix=False), _sbh(10 + 24 / 8)),                       # fused attention: no scores
])
def test_activation_memory_is_the_published_formula(kw, expected):
    """Korthikanti et al. 2022, table 2: 2-byte activations, 1-byte dropout masks, an MLP of 4h."""
    assert layer_activation_bytes(seq=S, batch=B, hidden=H, heads=A, **kw) == pytest.approx(expected)


def test_fp32_activations_double_the_two_byte_terms_only():
    fp32 = layer_activation_bytes(seq=S, batch=B, hidden=H, heads=A, act_bytes=4)
    assert fp32 == pytest.approx(_sbh(66 + 9 * A * S / H))     # masks stay 1 byte (2 of 34, 1 of 5)
