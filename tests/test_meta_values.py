"""Capture what Hugging Face users run (`projection/ops/meta_values.py`): value reads of ``meta`` tensors answered
by rule, with a note when an answer rests on an assumption; BERT, GPT-2 (gradient checkpointing,
``use_cache=False``), Llama, T5 and ViT estimated with their masks in Python and through ``prenet estimate``."""
from __future__ import annotations

import json
import textwrap

import pytest
import torch

from benchmarks.hf_mask_capture import BATCH, SEQ, batch, build
from prenet_callbacks import estimate
from prenet_callbacks.cli import main
from prenet_callbacks.projection.ops.meta_values import MetaValues


# -- the rules, on plain tensors ---------------------------------------------------------------------
def test_uniform_values_are_followed_and_answered_exactly():
    with MetaValues() as values:
        mask = torch.ones(4, 16, dtype=torch.long, device="meta")
        assert not bool((mask == 0).any())
        assert mask.sum(-1).max().item() == 16
        assert (mask[:, -1:] * 3 + 1).float().mean().item() == 4.0      # a view, pointwise ops, a cast
        assert torch.full((2, 3), 7, device="meta").tolist() == [[7, 7, 7], [7, 7, 7]]
    assert values.answers.notes() == [] and len(values.answers.exact) == 4


def test_a_declared_mask_is_all_ones_and_the_answer_says_so():
    mask = torch.empty(4, 16, dtype=torch.long, device="meta")
    with MetaValues(declared=[(mask, 1)]) as values:
        assert bool(mask.bool().all())
        assert (mask == 0).sum().item() == 0
    (note,) = values.answers.notes()
    assert note.startswith("attention mask taken as all ones (a batch without padding): on 'meta' a tensor has no "
                           "values, so the model's 2 read(s) of it (.item() -> True, .item() -> 0) were answered")
    assert "a padded batch runs attention with an explicit mask" in note


def test_unknown_values_answer_all_and_any_as_an_ordinary_batch_and_nothing_else():
    positions = torch.arange(16, device="meta").expand(4, 16)
    with MetaValues() as values:
        assert bool((positions.diff(dim=-1) != 1).cumsum(-1)[:, -1].eq(0).all())   # HF's packed-sequence check
        assert not bool(torch.isnan(torch.empty(3, device="meta")).any())
        with pytest.raises(RuntimeError, match="no rule knows"):
            positions.sum().item()
    (note,) = values.answers.notes()
    assert note == ("2 check(s) of values the model computes on 'meta' (.all() -> True, .any() -> False) answered as "
                    "for an ordinary batch (no padding, no packed sequences, no NaN)")


def test_a_partial_write_drops_what_was_known():
    with MetaValues() as values:
        mask = torch.ones(2, 8, dtype=torch.bool, device="meta")
        mask[0, 3] = False                   # part of the storage written: its one value is no longer known
        assert bool(mask.all())              # answered by the default rule, not from the stale fact
        whole = torch.zeros(2, 8, device="meta")
        whole.fill_(2.0)                     # the whole storage written: known again
        assert whole.max().item() == 2.0
    assert values.answers.default == [".all() -> True"] and values.answers.exact == [".item() -> 2.0"]


# -- Hugging Face models (the configs and batches of benchmarks/hf_mask_capture.py) ----------------------------
B, S = BATCH, SEQ


@pytest.fixture(autouse=True)
def _quiet_deprecations():
    import warnings

    with warnings.catch_warnings():   # transformers 5 renames gradient_checkpointing_*; 4.x has only these names
        warnings.filterwarnings("ignore", ".*gradient_checkpointing.*", FutureWarning)
        yield


def _model(name: str, device: str = "meta"):
    pytest.importorskip("transformers", reason="the transformers extra is not installed")
    return build(name, device)


def _batch(name: str, mask: str | None) -> dict[str, torch.Tensor]:
    return batch(name, mask or "none")


def _h100(name: str, inputs: dict, device: str = "meta"):
    result = estimate(_model(name, device), inputs, targets=["H100"])
    mask_notes = [n for n in result.notes if n.startswith("attention mask taken as all ones")]
    return result.rows[0]["step_s"], mask_notes, result.notes


TEXT = ["bert", "gpt2", "llama", "t5"]


@pytest.mark.parametrize("name", TEXT)
def test_text_models_estimate_on_meta_with_their_masks(name):
    plain, plain_notes, _ = _h100(name, _batch(name, None))
    ones, ones_notes, _ = _h100(name, _batch(name, "ones"))          # a real all-ones mask: known, no note
    meta_batch = {k: v.to("meta") for k, v in _batch(name, "ones").items()}
    meta, meta_notes, _ = _h100(name, meta_batch)                    # a meta mask: assumed all ones, a note
    padded, padded_notes, _ = _h100(name, _batch(name, "padded"))    # real padding on a meta model: assumed
    assert plain_notes == [] and ones_notes == []
    assert len(meta_notes) == 1 and len(padded_notes) == 1
    assert meta == pytest.approx(ones) and padded == pytest.approx(ones)   # the same capture, as the note says
    assert ones == pytest.approx(plain, rel=0.05)                          # with and without the mask: close


@pytest.mark.parametrize("name", TEXT)
def test_a_real_capture_with_padding_runs_the_masked_path_and_needs_no_note(name):
    ones = _h100(name, _batch(name, "ones"))[0]
    real_ones, notes_ones, _ = _h100(name, _batch(name, "ones"), device="cpu")
    real_padded, notes_padded, _ = _h100(name, _batch(name, "padded"), device="cpu")
    assert notes_ones == notes_padded == []
    # the meta capture is the real one without padding, but for the copies of CPU's masked SDPA: with a mask the CPU
    # runs the math kernel, whose contiguous output the model copies at `.contiguous()`/`.reshape` (2-6 forward, 6-18
    # backward here); a GPU takes a mask in the memory-efficient kernel, laid out as the meta capture lays it out
    assert real_ones == pytest.approx(ones, rel=0.07)
    assert real_padded > real_ones                             # attention with an explicit mask costs more


def test_gpt2_with_checkpointing_and_no_cache_is_estimated_as_full_recompute():
    model = _model("gpt2")
    assert model.is_gradient_checkpointing and not model.config.use_cache
    checkpointed = estimate(model, _batch("gpt2", "padded"), targets=["H100"]).rows[0]["step_s"]
    assert model.is_gradient_checkpointing                     # the model is left as it was
    without = _model("gpt2")
    without.gradient_checkpointing_disable()
    plain = estimate(without, _batch("gpt2", "padded"), targets=["H100"]).rows[0]["step_s"]
    assert checkpointed > plain                                # each block's forward runs again in backward


def test_vit_estimates_on_meta_and_for_real_alike():
    meta, notes, _ = _h100("vit", _batch("vit", None))
    real = _h100("vit", _batch("vit", None), device="cpu")[0]
    # the same ops: the meta capture lays SDPA's output and gradients out as the fused kernels do (`capture.
    # _fused_layout`); until it did, it held 8 copies of the hidden state the real capture does not (6.3% above it)
    assert notes == [] and meta == pytest.approx(real, rel=0.01)


MODELS = textwrap.dedent("""
    from benchmarks.hf_mask_capture import build

    def gpt2():          # gradient checkpointing on, use_cache=False
        return build("gpt2", "meta")

    def t5():
        return build("t5", "meta")
""")


@pytest.mark.parametrize("name", ["gpt2", "t5"])
def test_prenet_estimate_takes_a_hugging_face_model_with_its_mask(name, tmp_path, monkeypatch, capsys):
    pytest.importorskip("transformers", reason="the transformers extra is not installed")
    (tmp_path / "hf_models.py").write_text(MODELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    code = main(["estimate", f"hf_models:{name}", "--input", f"input_ids={B}x{S}:int64",
                 "--input", f"attention_mask={B}x{S}:int64", "--input", f"labels={B}x{S}:int64",
                 "--targets", "H100", "--json"])
    assert code == 0
    found = json.loads(capsys.readouterr().out)
    assert any(note.startswith("attention mask taken as all ones") for note in found["notes"])
    python = estimate(_model(name), {k: v.to("meta") for k, v in _batch(name, "ones").items()}, targets=["H100"])
    assert found["targets"][0]["step_s"] == pytest.approx(python.rows[0]["step_s"], rel=1e-6)
