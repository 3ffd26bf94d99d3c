"""Issue 7: invalid input to every CLI command and public function gives a clear error.

CLI: exit code 2 and exactly one line on stderr (``prenet <command>: error: ...``), no traceback.
Python API: a `ValueError` (or subclass) whose message names the bad value.

Commands that do real work before validating (train, evaluate) are only given inputs that fail
fast; cases found to run for minutes are listed in the module's report, not run here.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from prenet_callbacks.cli import build_parser, main

COMMANDS = {a.dest: a for a in build_parser()._subparsers._group_actions}  # noqa: SLF001
SUBCOMMANDS = set(next(iter(COMMANDS.values())).choices) if COMMANDS else set()


def test_every_sub_command_is_installed():
    # a missing one is a packaging fault, never a reason to skip its tests
    assert {"hardware", "estimate", "report", "train", "evaluate", "collect"} <= SUBCOMMANDS


def cli(argv: list[str], capsys) -> tuple[int, list[str], str]:
    """Run `prenet ARGV` in-process: (exit code, non-empty stderr lines, stdout)."""
    try:
        rc = main(argv)
    except SystemExit as exit_:  # argparse
        rc = exit_.code if isinstance(exit_.code, int) else 1
    captured = capsys.readouterr()
    return rc, [line for line in captured.err.splitlines() if line.strip()], captured.out


def assert_usage_error(argv: list[str], capsys, *words: str) -> str:
    rc, lines, _ = cli(argv, capsys)
    assert rc == 2, (rc, lines)
    assert len(lines) == 1, lines
    line = lines[0]
    assert "Traceback" not in line and "error" in line
    for word in words:
        assert word.lower() in line.lower(), (word, line)
    return line


@pytest.fixture
def files(tmp_path):
    (tmp_path / "bad.toml").write_text("[[accelerator]\nname = 'X'\n")
    (tmp_path / "bad_field.toml").write_text("[[accelerator]]\nname = 'My GPU'\nmemory_gb = 'lots'\n")
    (tmp_path / "notjson.json").write_text("not json")
    (tmp_path / "foreign.json").write_text(json.dumps({"schema": "other/1"}))
    (tmp_path / "future.json").write_text(json.dumps({"schema": "prenet-report/9"}))
    (tmp_path / "badfield.json").write_text(json.dumps({"schema": "prenet-report/1", "predictions": 5}))
    (tmp_path / "badentry.json").write_text(json.dumps({"schema": "prenet-report/1", "predictions": [1, 2]}))
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "afile").write_text("x")
    (tmp_path / "dir").mkdir()
    return tmp_path


# ------------------------------------------------------------------------------------------------
# prenet hardware
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, words", [
    (["nosuchgpu"], ["nosuchgpu", "closest"]),
    (["--min-memory", "-1"], ["--min-memory"]),
    (["--min-memory", "nan"], ["--min-memory"]),
    (["--vendor", "nosuchvendor"], ["nosuchvendor", "NVIDIA"]),
    (["--catalog", "{tmp}/missing.toml"], ["missing.toml"]),
    (["--catalog", "{tmp}/bad.toml"], ["bad.toml", "TOML"]),
    (["--catalog", "{tmp}/bad_field.toml"], ["bad_field.toml", "memory_gb"]),
    (["--catalog", "{tmp}/dir"], ["dir"]),
])
def test_hardware_bad_input(files, capsys, args, words):
    assert_usage_error(["hardware", *[a.format(tmp=files) for a in args]], capsys, *words)


def test_hardware_broken_override_in_the_environment(files, capsys, monkeypatch):
    monkeypatch.setenv("PRENET_HARDWARE", str(files / "bad.toml"))
    assert_usage_error(["hardware"], capsys, "bad.toml")


def test_hardware_empty_name(capsys):
    assert_usage_error(["hardware", ""], capsys, "name")


# ------------------------------------------------------------------------------------------------
# argparse-level errors, for every command
# ------------------------------------------------------------------------------------------------
ARGPARSE_ERRORS = [
    ["nosuchcommand"],
    ["hardware", "--min-memory", "abc"],
    ["hardware", "--bogus"],
    ["estimate", "tests.model_zoo:MLP"],             # missing --input
    ["report"],                                      # missing REPORT.json
    ["report", "r.json", "--width", "wide"],
    ["train"],                                       # missing --out
    ["evaluate", "--members", "x", "--json", "e.json"],
    ["collect"],                                     # missing --out
]


@pytest.mark.parametrize("argv", ARGPARSE_ERRORS, ids=lambda a: " ".join(a))
def test_argparse_errors_are_one_line(capsys, argv):
    assert_usage_error(argv, capsys)


@pytest.mark.parametrize("argv", ARGPARSE_ERRORS, ids=lambda a: " ".join(a))
def test_argparse_errors_exit_2_and_end_with_the_error(capsys, argv):
    rc, lines, _ = cli(argv, capsys)
    assert rc == 2 and lines and "error:" in lines[-1] and not any("Traceback" in line for line in lines)


def test_no_command_is_one_line(capsys):
    assert_usage_error([], capsys, "command")


# ------------------------------------------------------------------------------------------------
# prenet estimate
# ------------------------------------------------------------------------------------------------
MLP = "tests.model_zoo:MLP"


@pytest.mark.parametrize("args, words", [
    (["nomodule_xyz:fn", "-i", "4,32"], ["nomodule_xyz"]),
    (["tests.model_zoo:NoSuch", "-i", "4,32"], ["NoSuch"]),
    (["tests.model_zoo", "-i", "4,32"], ["module:callable"]),
    (["tests.model_zoo:ZOO", "-i", "4,32"], ["ZOO"]),
    ([MLP, "-i", "abc"], ["abc"]),
    ([MLP, "-i", "0,32"], ["0,32"]),
    ([MLP, "-i", "4,32:int7"], ["int7"]),
    ([MLP, "-i", "4,32", "--targets", "NoSuchGPU"], ["NoSuchGPU"]),
    ([MLP, "-i", "4,32", "--precision", "fp7"], ["fp7"]),
    ([MLP, "-i", "4,32", "--optimizer", "lion9"], ["lion9"]),
    ([MLP, "-i", "4,32", "--steps", "-5"], ["--steps"]),
    ([MLP, "-i", "4,32", "--steps", "0"], ["--steps"]),
    ([MLP, "-i", "4,32", "--predictor", "no_such_predictor_dir"], ["--predictor", "no_such_predictor_dir", "not found"]),
    ([MLP, "-i", "4,32", "--model-kwargs", "{bad"], ["--model-kwargs"]),
    ([MLP, "-i", "4,32", "--model-kwargs", "[1, 2]"], ["--model-kwargs"]),
    ([MLP, "-i", "4,7"], ["[4, 7]"]),  # the input does not fit the model
])
def test_estimate_bad_input(capsys, args, words):
    assert_usage_error(["estimate", *args], capsys, *words)


@pytest.mark.parametrize("args", [
    [MLP, "-i", "4,32", "--model-kwargs", '{"nope": 1}'],
    ["tests.model_zoo:loss_fn", "-i", "4,32"],
], ids=["unknown-kwarg", "not-a-factory"])
def test_estimate_model_that_cannot_be_built(capsys, args):
    assert_usage_error(["estimate", *args], capsys)


# ------------------------------------------------------------------------------------------------
# prenet report
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, words", [
    ("missing.json", ["missing.json", "does not exist"]),
    ("notjson.json", ["notjson.json", "JSON"]),
    ("binary.json", ["binary.json"]),
    ("foreign.json", ["foreign.json", "schema"]),
    ("future.json", ["future.json", "prenet-report/9"]),
    ("badfield.json", ["badfield.json", "predictions"]),
    ("badentry.json", ["badentry.json", "predictions"]),
    ("dir", ["dir", "directory"]),
])
def test_report_bad_file(files, capsys, name, words):
    assert_usage_error(["report", str(files / name)], capsys, *words)


@pytest.fixture
def good_report(tmp_path):
    from prenet_callbacks.report import Report

    report = Report(current={"device": "cpu", "devices": 1, "precision": "32-true"}, plan={"total_steps": 10})
    return report.save(tmp_path / "good.json")


@pytest.mark.parametrize("args, words", [
    (["--targets", "NoSuchGPU"], ["NoSuchGPU"]),
    (["--width", "-3"], ["--width"]),
    (["--width", "0"], ["--width"]),
    (["--out", "{tmp}/afile/sub.json"], ["afile"]),
    (["--out", "{tmp}/dir"], ["dir"]),
    (["--predictor", "{tmp}/nopredictor"], ["--predictor", "--targets"]),
    (["--targets", "T4", "--predictor", "{tmp}/nopredictor"], ["--predictor", "nopredictor", "not found"]),
])
def test_report_bad_options(files, good_report, capsys, args, words):
    assert_usage_error(["report", str(good_report), *[a.format(tmp=files) for a in args]], capsys, *words)


# ------------------------------------------------------------------------------------------------
# prenet train / evaluate / collect: inputs that must fail before any work
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, words", [
    (["--data", "{tmp}/nodata", "--out", "{tmp}/out"], ["nodata"]),
    (["--out", "{tmp}/out", "--sources", "nosuch"], ["nosuch"]),
    (["--out", "{tmp}/out", "--weight-decay", "gemm"], ["CLASS=VALUE", "gemm=0.01"]),
    (["--out", "{tmp}/out", "--weight-decay", "lstm=1"], ["lstm=1", "elementwise"]),
    (["--out", "{tmp}/out", "--weight-decay", "gemm=-1"], ["gemm=-1", ">= 0"]),
    (["--out", "{tmp}/out", "--weight-decay", "norm=nan"], ["norm=nan"]),
])
def test_train_bad_input(files, capsys, args, words):
    line = assert_usage_error(["train", *[a.format(tmp=files) for a in args]], capsys, *words)
    assert line.startswith("prenet train: error:"), line


def test_module_errors_name_the_module_command(files, capsys):
    from predictor_models import evaluate, train

    assert train.main(["--data", str(files / "nodata"), "--out", str(files / "out")]) == 2
    assert capsys.readouterr().err.startswith("python -m predictor_models.train: error:")
    assert evaluate.main(["--data", str(files / "nodata"), "--json", str(files / "e.json")]) == 2
    assert capsys.readouterr().err.startswith("python -m predictor_models.evaluate: error:")


@pytest.mark.slow
@pytest.mark.parametrize("args", [["--members", "-1", "--out", "{tmp}/out"], ["--out", "{tmp}/afile/sub"]],
                         ids=["members", "out-inside-a-file"])
def test_train_bad_options_fail_fast(files, capsys, args):
    assert_usage_error(["train", "--sources", "justus", *[a.format(tmp=files) for a in args]], capsys)


def test_evaluate_bad_weight_decay(files, capsys):
    line = assert_usage_error(["evaluate", "--json", str(files / "e.json"), "--weight-decay", "conv=x"], capsys,
                              "conv=x")
    assert line.startswith("prenet evaluate: error: --weight-decay")


def test_evaluate_missing_data(files, capsys):
    line = assert_usage_error(["evaluate", "--data", str(files / "nodata"), "--json", str(files / "e.json")], capsys,
                              "nodata")
    assert line.startswith("prenet evaluate: error:"), line


@pytest.mark.slow
def test_evaluate_unknown_gpu(files, capsys):
    assert_usage_error(["evaluate", "--json", str(files / "e.json"), "--gpus", "NoSuchGPU"], capsys, "NoSuchGPU")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_collect_without_a_gpu(files, capsys):
    assert_usage_error(["collect", "--out", str(files / "c")], capsys, "CUDA")


def test_the_installed_command_exits_2_with_one_line(files):
    """The real entry point, in a fresh process (no pytest capture in between)."""
    proc = subprocess.run([sys.executable, "-m", "prenet_callbacks.cli", "report", str(files / "notjson.json")],
                          capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[1])
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip() and "Warning" not in line
             and not line.startswith("  warnings.warn")]
    assert len(lines) == 1 and lines[0].startswith("prenet report: error:"), proc.stderr


# ------------------------------------------------------------------------------------------------
# Public Python functions
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, words", [
    (dict(report_path=123), ["report_path"]),
    (dict(report_path=""), ["report_path"]),
    (dict(targets=["NoSuchGPU"]), ["NoSuchGPU"]),
    (dict(targets=[None]), ["targets"]),
    (dict(warmup_steps=1.5), ["warmup_steps"]),
    (dict(warmup_steps="3"), ["warmup_steps"]),
    (dict(profile_steps=-2), ["profile_steps"]),
    (dict(timing_steps=0), ["timing_steps"]),
    (dict(metrics_every_n_steps=0), ["metrics_every_n_steps"]),
    (dict(metrics_every_n_steps=math.inf), ["metrics_every_n_steps"]),
    (dict(metrics_every_n_steps=5, log_every_n_steps=10), ["metrics_every_n_steps", "old name"]),
])
def test_callback_constructor(kwargs, words):
    from prenet_callbacks import PreNeTCallback

    with pytest.raises(ValueError) as info:
        PreNeTCallback(**kwargs)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize("name, words", [
    ("missing.json", ["does not exist"]), ("dir", ["directory"]), ("notjson.json", ["JSON"]),
    ("binary.json", ["binary.json"]), ("foreign.json", ["schema"]), ("badfield.json", ["predictions"]),
    ("badentry.json", ["predictions"]),
])
def test_report_load(files, name, words):
    from prenet_callbacks import Report
    from prenet_callbacks.report import ReportError

    with pytest.raises(ReportError) as info:
        Report.load(files / name)
    assert name in str(info.value)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize("data", [[], "x", {"schema": 5}, {"schema": "prenet-report/1", "current": [1]},
                                  {"schema": "prenet-report/1", "actual": 3},
                                  {"schema": "prenet-report/1", "limitations": "none"}])
def test_report_from_dict(data):
    from prenet_callbacks import Report
    from prenet_callbacks.report import ReportError

    with pytest.raises(ReportError):
        Report.from_dict(data)


@pytest.mark.parametrize("name", ["", "nosuchgpu", "   "])
def test_lookup_hardware(name):
    from prenet_callbacks import lookup_hardware

    with pytest.raises(ValueError, match="unknown hardware"):
        lookup_hardware(name)


@pytest.mark.parametrize("call", ["lookup_int", "list_memory_str", "list_vendor_int"])
def test_hardware_functions_with_wrong_types(call):
    from prenet_callbacks import list_hardware, lookup_hardware

    with pytest.raises(ValueError) as info:
        if call == "lookup_int":
            lookup_hardware(123)
        elif call == "list_memory_str":
            list_hardware(min_memory_gb="abc")
        else:
            list_hardware(vendor=5)
    assert "empty" not in str(info.value)
    assert any(word in str(info.value) for word in ("123", "min_memory_gb", "vendor"))


def _mlp():
    from tests.model_zoo import MLP

    return MLP()


ESTIMATE_OK_ERRORS = {
    "unknown_target": (dict(targets=["NoSuchGPU"]), "NoSuchGPU"),
    "precision": (dict(precision="fp7"), "fp7"),
    "optimizer": (dict(optimizer="lion9"), "lion9"),
    "steps": (dict(steps=-1), "steps"),
    "matmul_precision": (dict(float32_matmul_precision="low"), "low"),
    "shape_mismatch": (dict(example_input=torch.randn(4, 7)), "4x7"),  # the model's own message
    "input_type": (dict(example_input="abc"), "str"),
}


@pytest.mark.parametrize("case", sorted(ESTIMATE_OK_ERRORS))
def test_estimate_function(case):
    from prenet_callbacks import estimate

    kwargs, word = ESTIMATE_OK_ERRORS[case]
    kwargs = dict(kwargs)
    example = kwargs.pop("example_input", torch.randn(4, 32))
    from prenet_callbacks.projection.ops.capture import CaptureError

    with pytest.raises((ValueError, CaptureError)) as info:
        estimate(_mlp(), example, **kwargs)
    assert word in str(info.value)


def test_public_estimate_is_the_function_after_the_submodule_is_imported():
    import importlib

    importlib.import_module("prenet_callbacks.projection.estimation")  # the implementation module
    importlib.import_module("prenet_callbacks.cli.estimate")
    from prenet_callbacks import estimate

    assert callable(estimate)


ESTIMATE_BUGS = {
    "model_not_a_module": lambda estimate: estimate("resnet50", torch.randn(4, 32)),
    "steps_nan": lambda estimate: estimate(_mlp(), torch.randn(4, 32), steps=float("nan")),
    "steps_bool": lambda estimate: estimate(_mlp(), torch.randn(4, 32), steps=True),
    "batch_size_zero": lambda estimate: estimate(_mlp(), torch.randn(4, 32), batch_size=0),
    "zero_stage_7": lambda estimate: estimate(_mlp(), torch.randn(4, 32), deepspeed={"zero_stage": 7}),
    "deepspeed_not_a_dict": lambda estimate: estimate(_mlp(), torch.randn(4, 32), deepspeed="zero3"),
}


@pytest.mark.parametrize("case", sorted(ESTIMATE_BUGS))
def test_estimate_function_rejects(case):
    from prenet_callbacks import estimate

    with pytest.raises(ValueError):
        ESTIMATE_BUGS[case](estimate)
