"""The panel and every table fit the console's real width: nothing cut at 80, 100 or 160 columns.

A real Lightning fit of a model with long layer names is projected onto the default targets plus a GPU the
model does not fit, then rendered (the panel, ``prenet report`` and ``prenet estimate``) at each width.
"""
from __future__ import annotations

import io
import re
import textwrap
import warnings

import pytest
import torch
from rich.console import Console
from rich.text import Text
from torch import nn

import lightning.pytorch as pl
from prenet_callbacks import PreNeTCallback
from prenet_callbacks.cli import main
from prenet_callbacks.outputs.render import render_text
from prenet_callbacks.report import Report
from prenet_callbacks.report_parts import TargetRow
from prenet_callbacks.outputs.terminal import LOG_WIDTH, output_width, print_block
from tests.lightning_helpers import dataset
from tests.projection_fixtures import importable_models

WIDTHS = (80, 100, 160)
_BLOCK = "position_wise_feed_forward"


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        setattr(self, _BLOCK, nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 8)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + getattr(self, _BLOCK)(x)


class _LongNames(pl.LightningModule):
    """Layer names such as ``encoder.transformer_blocks.1.position_wise_feed_forward.0`` (56 characters)."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Module()
        self.encoder.transformer_blocks = nn.ModuleList(_Block() for _ in range(3))
        self.head = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.encoder.transformer_blocks:
            x = block(x)
        return self.head(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Report:
    folder = tmp_path_factory.mktemp("width")
    callback = PreNeTCallback(warmup_steps=1, profile_steps=1, timing_steps=3, print_report=False, html=False,
                              targets=["default", "B200", "TPU v5e"], report_path=folder / "r.json")
    trainer = pl.Trainer(max_epochs=2, callbacks=[callback], logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, default_root_dir=folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(_LongNames(), torch.utils.data.DataLoader(dataset(160), batch_size=4))
    saved = Report.load(folder / "r.json")
    assert len(saved.targets) >= 8 and saved.measured["layers"]["layers"]
    return saved


def _cut_free(text: str, width: int, rows: list[TargetRow], layer_names: list[str]) -> None:
    """Every line fits; every hardware name, band, time and cost of the table is whole on one line; a "…" only
    ever starts a layer name whose tail it keeps."""
    lines = text.splitlines()
    assert max(Text(line).cell_len for line in lines) <= width, "\n".join(lines)
    for row in rows:
        label = row.display_label
        found = [line for line in lines if re.search(rf"(^|[\s│]){re.escape(label)}(\s|$|│)", line)]
        assert found or row.current, f"{label} is not whole on any line at {width}:\n{text}"
    for line in lines:
        for match in re.finditer(r"…(\S+)", line):
            assert any(name.endswith(match.group(1)) for name in layer_names), (match.group(0), line)


def _targets(report: Report) -> list[TargetRow]:
    return [TargetRow.from_dict(t) for t in report.targets]


def _layer_names(report: Report) -> list[str]:
    return [layer["name"] for layer in report.measured["layers"]["layers"]]


@pytest.mark.parametrize("width", WIDTHS)
def test_panel_fits_without_cuts(report, width):
    text = render_text(report, width=width)
    rows = _targets(report)
    _cut_free(text, width, rows, _layer_names(report))
    for row in rows:   # every figure of the step and band columns stays whole (no "$0.…", "-31/…")
        band = re.escape(f"/+{(row.step_high_s / row.step_s - 1) * 100:.0f}%") if not row.current else ""
        assert not band or re.search(band, text), (row.label, text)
    assert "…" not in "".join(line for line in text.splitlines() if "─" in line or "┃" in line)


def test_columns_leave_in_order_as_the_width_shrinks(report):
    texts = {w: render_text(report, width=w) for w in (160, 100, 80)}
    wide, medium, narrow = (" ".join(line for line in texts[w].splitlines() if "┃" in line) for w in texts)
    assert "method" in wide and "FLOP/B" in wide and "priced by" in wide
    assert "method" not in medium and "priced by" not in medium and "$/h" in medium
    assert "method" not in narrow and "$/h" not in narrow and "FLOP/B" not in narrow
    for headers in (wide, medium, narrow):   # what stays at any width
        assert all(word in headers for word in ("hardware", "step", "time", "band", "fits", "cost", "forward"))
    wide, narrow = texts[160], texts[80]
    # at 80 the longest names lose their head, keeping the part that names the layer
    assert re.search(r"…\S*\d\.position_wise_feed_forward\.\d", narrow), narrow
    assert "encoder.transformer_blocks.0.position_wise_feed_forward.0" in wide


@pytest.mark.parametrize("width", WIDTHS)
def test_prenet_report_follows_columns_when_piped(report, tmp_path, monkeypatch, capsys, width):
    path = tmp_path / "r.json"
    report.save(path)
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["report", str(path)]) == 0
    _cut_free(capsys.readouterr().out, width, _targets(report), _layer_names(report))


MODELS = textwrap.dedent("""
    from torch import nn

    def mlp():
        return nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512))
""")


@pytest.mark.parametrize("width", WIDTHS)
def test_prenet_estimate_table_fits(tmp_path, monkeypatch, capsys, width):
    models = importable_models(tmp_path, monkeypatch, MODELS, "width_models_for_test")
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["estimate", f"{models}:mlp", "-i", "64,512", "--steps", "20000", "--targets", "default",
                 "8x H200", "TPU v5e"]) == 0
    out = capsys.readouterr().out
    assert "8x H200" in out and "TPU v5e" in out
    lines = out.splitlines()
    assert max(Text(line).cell_len for line in lines) <= width
    table = [line for line in lines if "│" in line]
    assert table and not any("…" in line for line in table), out


def test_the_width_rule(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert output_width(io.StringIO()) == LOG_WIDTH == 100          # a log file or a pipe
    monkeypatch.setenv("COLUMNS", "87")
    assert output_width(io.StringIO()) == 87                       # COLUMNS respected when not a terminal

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("COLUMNS", "93")                            # on a terminal: rich's own detection
    assert output_width(Terminal()) == Console(file=Terminal()).width == 93


def test_print_block_renders_at_the_width_rule(report, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = io.StringIO()
    from prenet_callbacks.outputs.render import report_renderable

    print_block(report_renderable(report, live=True), file=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("╭─ PreNeT") and max(Text(line).cell_len for line in lines) == 80
