"""The panel and the end line start on a line of their own while a progress bar is drawn, and the bar goes on below.

Real fits with Lightning's ``TQDMProgressBar`` and ``RichProgressBar`` (its console made a terminal, where rich
redraws a live display) and a Hugging Face ``Trainer`` with its tqdm bar; stdout and stderr are captured together
as a terminal or a log file would show them.
"""
from __future__ import annotations

import contextlib
import io
import re
import warnings

import pytest

import lightning.pytorch as pl
from lightning.pytorch.callbacks import RichProgressBar, TQDMProgressBar
from prenet_callbacks import PreNeTCallback, PreNeTTrainerCallback
from tests.hf_helpers import Samples, trainer as hf_trainer
from tests.lightning_helpers import TinyModule, loaders

FAST = dict(warmup_steps=1, profile_steps=1, timing_steps=3, targets=["A100"], html=False)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
PANEL, END = "╭─ PreNeT", "PreNeT: the "


def line_before(output: str, marker: str, *, terminal: bool) -> str:
    """What shares the line where ``marker`` starts: in a log file everything since the last newline; on a
    terminal only what a carriage return (and rich's erase-line) left standing."""
    start = output.index(marker)
    line = output[:start].rsplit("\n", 1)[-1]
    if terminal:
        line = line.rsplit("\r", 1)[-1]
    return _ANSI.sub("", line).strip()


def _fit(bar: pl.Callback, out: io.StringIO, report_path) -> None:
    train, val = loaders(train_batches=40)
    callback = PreNeTCallback(report_path=report_path, **FAST)
    trainer = pl.Trainer(max_epochs=2, callbacks=[callback, bar], logger=False, enable_checkpointing=False,
                         enable_model_summary=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(TinyModule(), train, val)


def test_tqdm_bar_lightning(tmp_path):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        _fit(TQDMProgressBar(refresh_rate=1), out, tmp_path / "r.json")
    text = out.getvalue()
    assert "Epoch 0:" in text.split(PANEL)[0]                       # the bar was drawn before the panel
    assert line_before(text, PANEL, terminal=False) == ""          # ... and the panel is not on its line
    assert line_before(text, END, terminal=False) == ""
    assert re.search(r"Epoch 0: +\d+%", text.split(PANEL)[1])       # the bar is drawn again below


def test_rich_bar_lightning_on_a_terminal(tmp_path):
    out = io.StringIO()
    bar = RichProgressBar(refresh_rate=1, console_kwargs={"force_terminal": True, "width": 100, "file": out})
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        _fit(bar, out, tmp_path / "r.json")
    text = out.getvalue()
    before = text.split(PANEL)[0]
    assert "Epoch 0/1" in before and "\x1b[2K" in before            # a live display was drawn
    assert line_before(text, PANEL, terminal=True) == ""
    assert line_before(text, END, terminal=True) == ""
    assert text.count(PANEL) == 1 and "Epoch 1/1" in text.split(PANEL)[1]


@pytest.mark.filterwarnings("ignore")
def test_tqdm_bar_hf_trainer(tmp_path):
    out = io.StringIO()
    callback = PreNeTTrainerCallback(report_path=tmp_path / "r.json", **FAST)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        hf_trainer(tmp_path, [callback], train=Samples(160), disable_tqdm=False).train()
    text = out.getvalue()
    assert re.search(r"\d+/80 \[", text.split(PANEL)[0])             # HF's bar ran before the panel
    assert line_before(text, PANEL, terminal=False) == ""
    assert line_before(text, END, terminal=False) == ""
    assert re.search(r"\d+/80 \[", text.split(PANEL)[1])
