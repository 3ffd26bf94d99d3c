"""A finished run's report re-projected with other gradient accumulation or with activation checkpointing
(``project_report(accumulate=..., activation_checkpointing=...)``, ``prenet report --accumulate
--activation-checkpointing``): the same questions `estimate` answers, asked of the recorded step."""
from __future__ import annotations

import json

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import lightning.pytorch as pl

from prenet_callbacks import PreNeTCallback, estimate
from prenet_callbacks.cli import main
from prenet_callbacks.projection import project_report
from prenet_callbacks.projection.from_report import workload_from_report
from prenet_callbacks.projection.report_blocks import find_blocks
from prenet_callbacks.projection.report_whatif import reproject_whatif
from prenet_callbacks.report import Report
from tests.lightning_helpers import trainer
from tests.projection_fixtures import make_report

WIDTH, TOKENS, VOCAB, BATCH, BLOCKS, HEADS = 512, 128, 256, 4, 2, 8


class Block(nn.Module):
    """Pre-norm transformer block: fused attention and a GELU MLP (four Linears)."""

    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.qkv, self.proj = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)
        self.fc, self.out = nn.Linear(WIDTH, 4 * WIDTH), nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, HEADS, WIDTH // HEADS).permute(2, 0, 3, 1, 4)
        attended = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(b, t, WIDTH))
        return x + self.out(nn.functional.gelu(self.fc(self.ln2(x))))


class TinyLM(pl.LightningModule):
    """Embedding, an nn.ModuleList of identical blocks, a head."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(VOCAB, WIDTH)
        self.h = nn.ModuleList(Block() for _ in range(BLOCKS))
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.emb(ids)
        for block in self.h:
            x = block(x)
        return self.head(x)

    def training_step(self, batch, batch_idx):  # noqa: ANN001, ANN201
        (ids,) = batch
        return nn.functional.cross_entropy(self(ids).flatten(0, 1), ids.flatten())

    def configure_optimizers(self):  # noqa: ANN201
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


@pytest.fixture(scope="module")
def report_path(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("whatif")
    pl.seed_everything(0, verbose=False)
    ids = torch.randint(0, VOCAB, (BATCH * 8, TOKENS), generator=torch.Generator().manual_seed(0))
    callback = PreNeTCallback(report_path=tmp / "run.json", warmup_steps=1, profile_steps=1, timing_steps=3,
                              metrics_every_n_steps=5, targets=["H100"], print_report=False, html=False)
    trainer(tmp, [callback], max_steps=8).fit(TinyLM(), DataLoader(TensorDataset(ids), batch_size=BATCH))
    return tmp / "run.json"


def _rows(path, targets=("H100",), **kwargs):
    report = Report.load(path)
    return project_report(report, list(targets), **kwargs), report


def _target(rows, label="H100-SXM5"):
    (row,) = [r for r in rows if not r.get("current") and r["label"] == label]
    return row


def test_no_option_gives_todays_output(report_path):
    today, plain = _rows(report_path, ("H100", "8x H100"))
    for kwargs in ({"accumulate": None, "activation_checkpointing": None}, {"accumulate": 1}):   # 1: the run's own
        rows, report = _rows(report_path, ("H100", "8x H100"), **kwargs)
        assert rows == today
        assert json.loads(report.to_json())["projection"] == json.loads(plain.to_json())["projection"]
    assert "whatif" not in plain.projection
    assert not any("re-projection" in note for row in today for note in row.get("notes") or ())


def test_accumulate_repeats_the_micro_batches_and_the_optimizer_runs_once(report_path):
    one, _ = _rows(report_path, ("H100", "8x H100"))
    four, report = _rows(report_path, ("H100", "8x H100"), accumulate=4)
    a, b = _target(one), _target(four)
    # from a CPU run the H100 step is mostly the run's measured Python, whose optimizer share (x1, the rest x4)
    # moves with the machine's load (3.1x-3.6x seen, 4.3x on a clean clone: on this tiny model the gradient adds,
    # one kernel per tensor per extra micro-batch, cost more than the optimizer saves); at most one more
    # backward's worth, as the backward bound below; the device phases are exact (3x-4x anchored: next tests)
    assert 2.5 < b["step_s"] / a["step_s"] < 5.0
    assert b["phases_s"]["optimizer"] == a["phases_s"]["optimizer"]
    assert b["phases_s"]["forward"] == pytest.approx(4 * a["phases_s"]["forward"], rel=0.05)
    assert 4 * a["phases_s"]["backward"] < b["phases_s"]["backward"] < 5 * a["phases_s"]["backward"]   # + the adds
    assert b["global_batch"] == 4 * a["global_batch"] == 4 * BATCH
    assert _target(four, "8x H100-SXM5")["global_batch"] == 4 * _target(one, "8x H100-SXM5")["global_batch"]
    assert b["steps"] == a["steps"]                                   # the run keeps its optimizer steps
    # the steps, and the target's own warm-up, whose profiled steps are longer too (`projection/rows/one_off.py`)
    own = b["assumed"]["one_off_s"] - a["assumed"]["one_off_s"]
    assert b["total_s"] - a["total_s"] == pytest.approx(a["steps"] * (b["step_s"] - a["step_s"]) + own, abs=0.02)
    assert any("re-projection at accumulate=4 (the run: 1)" in note for note in b["notes"])
    current = [r for r in four if r.get("current")][0]
    assert current == [r for r in one if r.get("current")][0]          # the measured row stays as measured
    assert report.projection["whatif"] == {"accumulate": 4}


def test_checkpointing_recomputes_the_blocks_forward_and_saves_less(report_path):
    none, _ = _rows(report_path)
    full, report = _rows(report_path, activation_checkpointing="full")
    selective, _ = _rows(report_path, activation_checkpointing="selective")
    n, f, s = _target(none), _target(full), _target(selective)
    assert n["phases_s"]["backward"] < s["phases_s"]["backward"] < f["phases_s"]["backward"]
    assert f["phases_s"]["forward"] == n["phases_s"]["forward"]
    # the step is host-bound from a CPU run: selective re-runs the whole forward's Python, as full does
    assert n["step_s"] < f["step_s"] and n["step_s"] <= s["step_s"] <= f["step_s"]
    assert f["memory_gib"] < s["memory_gib"] < n["memory_gib"]
    assert f["global_batch"] == n["global_batch"]
    note = next(note for note in f["notes"] if "activation checkpointing (full)" in note)
    assert f"{BLOCKS} blocks h.0 ... h.{BLOCKS - 1}" in note and "do not record whether the run itself was checkpointed" in note
    assert report.projection["whatif"] == {"activation_checkpointing": "full"}


def _recomputed_gemms(workload) -> float:
    return sum(c for u in workload.units if u.name.endswith("(recomputed forward)") for s, c in u.ops
               if s.op_class == "gemm")


def test_the_recomputed_ops_are_those_estimate_recomputes(report_path):
    report = Report.load(report_path)
    with torch.device("meta"):
        model = TinyLM()
    ids = torch.zeros(BATCH, TOKENS, dtype=torch.long, device="meta")

    def gemms(workload, phase="bwd"):
        return sum(c for u in workload.units if u.phase == phase for s, c in u.ops if s.op_class == "gemm")

    baseline = gemms(estimate(model, ids, targets=[], loss_fn=lambda out: out.sum()).workload)
    for policy, per_block in (("full", 4), ("selective", 2)):    # selective keeps qkv's and fc's outputs
        workload, _ = reproject_whatif(workload_from_report(report), report, activation_checkpointing=policy)
        est = estimate(model, ids, targets=[], loss_fn=lambda out: out.sum(), activation_checkpointing=policy)
        assert _recomputed_gemms(workload) == gemms(est.workload) - baseline == per_block * BLOCKS
    workload, _ = reproject_whatif(workload_from_report(report), report, accumulate=3, activation_checkpointing="full")
    assert _recomputed_gemms(workload) == 3 * 4 * BLOCKS
    assert workload.micro_batches == 3 and workload.accumulate == 3


def test_a_gpu_run_stays_anchored_and_its_gpu_is_projected():
    report = make_report()
    rows = project_report(report, ["A100"], accumulate=4)
    current, projected = rows
    assert projected["name"] == current["name"] and projected["method"].startswith("anchored")
    assert 3.0 < projected["step_s"] / current["step_s"] < 4.0          # 4 micro-batches of work, one optimizer step
    assert projected["global_batch"] == 4 * current["global_batch"]


def test_bad_values_raise_with_the_fix(report_path):
    for bad in (0, 2.5, True, "4"):
        with pytest.raises(ValueError, match=r"accumulate must be an integer >= 1.*accumulate=4"):
            _rows(report_path, accumulate=bad)
    with pytest.raises(ValueError, match="activation_checkpointing must be None, 'full' or 'selective'"):
        _rows(report_path, activation_checkpointing="half")
    with pytest.raises(ValueError, match=r"repeated blocks.*none; re-project without activation_checkpointing"):
        project_report(make_report(), ["A100"], activation_checkpointing="full")   # layers block0..block3
    with pytest.raises(ValueError, match=r"per-layer ops.*profile_layers=False"):
        project_report(make_report(with_layers=False), ["A100"], activation_checkpointing="full")


def _layer(name: str, module_type: str, params: int = 0) -> dict:
    return {"name": name, "module_type": module_type, "params": params, "ops": []}


def test_blocks_are_the_largest_family_of_one_type():
    layers = [_layer("(root)", "Net"), _layer("net.0", "Linear", 10), _layer("net.1", "ReLU"),
              _layer("net.2", "Linear", 20)]
    assert find_blocks(layers) is None                            # a Sequential of mixed layers is not blocks
    for i in range(3):
        layers += [_layer(f"model.h.{i}", "Block"), _layer(f"model.h.{i}.attn.c_attn", "Conv1D", 30),
                   _layer(f"model.h.{i}.mlp.experts.0", "Expert", 5), _layer(f"model.h.{i}.mlp.experts.1", "Expert", 5)]
    blocks = find_blocks(layers)
    assert blocks.names == ("model.h.0", "model.h.1", "model.h.2")
    assert blocks.layers[1] == ("model.h.1", "model.h.1.attn.c_attn", "model.h.1.mlp.experts.0",
                                "model.h.1.mlp.experts.1")
    layers.append(_layer("model.h.3", "OtherBlock"))
    assert find_blocks(layers).names[0].startswith("model.h.0.mlp.experts")   # mixed: the next largest family


def test_cli_flags(report_path, tmp_path, capsys):
    assert main(["report", str(report_path), "--targets", "H100", "--accumulate", "4", "--json"]) == 0
    saved = json.loads(capsys.readouterr().out)
    assert [r["global_batch"] for r in saved["targets"]] == [BATCH, 4 * BATCH]     # measured, then H100
    assert saved["projection"]["whatif"] == {"accumulate": 4}
    assert main(["report", str(report_path), "--targets", "H100", "--activation-checkpointing", "selective"]) == 0
    assert "activation checkpointing (selective)" in " ".join(capsys.readouterr().out.split())
    assert main(["report", str(report_path), "--targets", "H100", "--accumulate", "0"]) == 2
    assert "--accumulate must be an integer >= 1" in capsys.readouterr().err
    assert main(["report", str(report_path), "--accumulate", "4"]) == 2
    assert "add --targets" in capsys.readouterr().err
    plain = tmp_path / "plain.json"
    make_report().save(plain)
    assert main(["report", str(plain), "--targets", "A100", "--activation-checkpointing", "full"]) == 2
    assert "repeated blocks" in capsys.readouterr().err
