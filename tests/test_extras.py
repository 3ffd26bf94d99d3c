"""An install takes only what is used: the core runs without any framework, each adapter without its framework
says which extra to install, and `PreNeTCallback` imports only the Lightning package the user's Trainer comes from.

Each case runs in a fresh interpreter; a package is made "not installed" with ``sys.modules[name] = None``
(then ``import name`` raises ImportError and ``importlib.util.find_spec(name)`` finds nothing), and
what got imported is read from ``sys.modules``.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS = ("lightning", "pytorch_lightning", "deepspeed", "transformers", "accelerate", "sklearn")


def _run(code: str, *, block: tuple[str, ...] = (), tmp_path: Path | None = None) -> dict:
    """Run ``code`` in a fresh interpreter with ``block`` made unimportable; its last line is JSON."""
    head = "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in block)
    tail = "\nimport json\nprint(json.dumps({**globals().get('result', {}), 'modules': sorted(m for m in " \
           "('lightning.pytorch', 'pytorch_lightning', 'deepspeed', 'transformers', 'sklearn') " \
           "if sys.modules.get(m) is not None)}))\n"
    proc = subprocess.run([sys.executable, "-c", head + textwrap.dedent(code) + tail], cwd=tmp_path or ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "PYTHONWARNINGS": "ignore",
                               "DS_ACCELERATOR": "cpu", "HOME": str(tmp_path or "/tmp")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_core_predicts_with_no_framework_installed(tmp_path):
    found = _run(f"""
        import torch
        from torch import nn
        from prenet_callbacks import Tracker, estimate
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
        rows = estimate(model, torch.randn(8, 16), targets=["H100", "8x A100"]).rows
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        tracker = Tracker(total_steps=30, model=model, optimizer=optimizer, targets=["H100"], print_report=False,
                          html=False, report_path={str(tmp_path / 'r.json')!r})
        for _ in range(30):
            model(torch.randn(8, 16)).sum().backward(); optimizer.step(); optimizer.zero_grad(); tracker.step()
        report = tracker.close()
        result = {{"rows": len(rows), "targets": len(report.targets), "predicted": bool(report.predictions)}}
    """, block=FRAMEWORKS, tmp_path=tmp_path)
    assert found["rows"] == 2 and found["targets"] >= 2 and found["predicted"]
    assert found["modules"] == []


@pytest.mark.parametrize("name, block, extra", [
    ("PreNeTCallback", ("lightning", "pytorch_lightning"), "prenet-callbacks[lightning]"),
    ("PreNeTTrainerCallback", ("transformers",), "prenet-callbacks[transformers]"),
])
def test_an_adapter_without_its_framework_names_the_extra(name, block, extra, tmp_path):
    found = _run(f"""
        import prenet_callbacks
        try:
            prenet_callbacks.{name}
            result = {{"error": None}}
        except ImportError as error:
            result = {{"error": str(error)}}
        from prenet_callbacks import *   # the names that need an extra are not in __all__
    """, block=block, tmp_path=tmp_path)
    assert found["error"] is not None and f"pip install '{extra}'" in found["error"]


def test_deepspeed_attach_and_prenet_train_without_their_extras(tmp_path):
    found = _run("""
        try:
            import integrations.deepspeed
            result = {"attach": None}
        except ImportError as error:
            result = {"attach": str(error)}
        from prenet_callbacks.cli import main
        result["train_exit"] = main(["train", "--out", "unused"])
    """, block=("deepspeed", "sklearn"), tmp_path=tmp_path)
    assert "pip install 'prenet-callbacks[deepspeed]'" in found["attach"]
    assert found["train_exit"] == 2


def test_prenet_train_names_the_train_extra(tmp_path):
    code = "import sys\nsys.modules['sklearn'] = None\nfrom prenet_callbacks.cli import main\nmain(['train', '--out', 'x'])"
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert "prenet train: error: prenet train needs sklearn" in proc.stderr
    assert "pip install 'prenet-callbacks[train]'" in proc.stderr


@pytest.mark.parametrize("package", ["lightning.pytorch", "pytorch_lightning"])
def test_the_callback_imports_only_the_lightning_package_of_the_users_trainer(package, tmp_path):
    other = "pytorch_lightning" if package == "lightning.pytorch" else "lightning.pytorch"
    found = _run(f"""
        import torch
        from torch import nn
        from prenet_callbacks import PreNeTCallback     # before Lightning, as isort orders 'prenet' < 'pytorch'
        import {package} as pl

        class Model(pl.LightningModule):
            def __init__(self):
                super().__init__()
                self.net = nn.Linear(8, 1)
            def training_step(self, batch, _):
                return self.net(batch[0]).pow(2).mean()
            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.01)

        class Mine(PreNeTCallback):    # a user's subclass
            pass

        data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(256, 8)), batch_size=8)
        callback = Mine(warmup_steps=1, profile_steps=1, timing_steps=5, print_report=False, targets=[], html=False,
                        report_path={str(tmp_path / 'r.json')!r})
        trainer = pl.Trainer(max_epochs=1, callbacks=[callback], logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False, default_root_dir={str(tmp_path)!r})
        trainer.fit(Model(), data)
        result = {{"predicted": bool(callback.report.predictions), "subclass": isinstance(callback, Mine),
                  "name": type(callback).__name__, "key": callback.state_key}}
    """, tmp_path=tmp_path)
    assert found["predicted"] and found["subclass"] and found["name"] == "Mine"
    assert found["key"].startswith("Mine{")
    assert package in found["modules"] and other not in found["modules"]
    assert "deepspeed" not in found["modules"]


def test_a_callback_built_before_any_trainer_module_fits_either_trainer(tmp_path):
    found = _run("""
        from prenet_callbacks import PreNeTCallback
        callback = PreNeTCallback(print_report=False, targets=[])     # no Lightning imported yet: both are
        import lightning.pytorch, pytorch_lightning
        result = {"both": isinstance(callback, lightning.pytorch.Callback)
                  and isinstance(callback, pytorch_lightning.Callback)}
    """, tmp_path=tmp_path)
    assert found["both"]


@pytest.mark.skipif(not all(__import__("importlib").util.find_spec(m) for m in ("transformers", "accelerate")),
                    reason="the transformers extra is not installed")
def test_a_trainer_run_needs_no_deepspeed(tmp_path):
    """With DeepSpeed installed, accelerate's ``unwrap_model`` (called by ``Trainer.__init__``) imports it, and
    DeepSpeed prints its accelerator warning: PreNeT itself never imports it, so without the extra it is absent."""
    found = _run(f"""
        import torch
        from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments
        from prenet_callbacks import PreNeTTrainerCallback
        config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                            intermediate_size=32)
        data = [{{"input_ids": torch.randint(0, 64, (8,)), "labels": torch.tensor(1)}} for _ in range(64)]
        args = TrainingArguments(output_dir={str(tmp_path / 'hf')!r}, max_steps=12, per_device_train_batch_size=4,
                                 report_to=[], use_cpu=True, save_strategy="no", disable_tqdm=True)
        callback = PreNeTTrainerCallback(warmup_steps=1, profile_steps=1, timing_steps=5, print_report=False,
                                         targets=[], html=False, report_path={str(tmp_path / 'r.json')!r})
        Trainer(model=BertForSequenceClassification(config), args=args, train_dataset=data,
                callbacks=[callback]).train()
        result = {{"predicted": bool(callback.report.predictions)}}
    """, block=("deepspeed",), tmp_path=tmp_path)
    assert found["predicted"] and "deepspeed" not in found["modules"]


def test_the_core_install_pulls_no_framework_and_the_test_extra_pulls_every_one():
    import re

    try:
        import tomllib
    except ModuleNotFoundError:   # Python 3.10: the core's tomli
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def names(requirements: list[str]) -> set[str]:
        return {re.split(r"[<>=;\[ ]", r, maxsplit=1)[0].strip().lower() for r in requirements}

    core = names(project["dependencies"])
    assert core == {"torch", "numpy", "rich", "threadpoolctl", "tomli"}
    extras = project["optional-dependencies"]
    assert {"lightning", "pytorch-lightning", "transformers", "deepspeed", "html", "all", "test"} <= set(extras)
    every = set().union(*(names(extras[name]) for name in extras if name not in ("all", "test")))
    assert {"lightning", "pytorch-lightning", "transformers", "accelerate", "deepspeed", "scikit-learn"} <= every
    assert extras["all"] == ["prenet-callbacks[lightning,pytorch-lightning,transformers,deepspeed,train,data]"]
    assert "prenet-callbacks[all]" in extras["test"]
