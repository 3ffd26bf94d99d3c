"""DeepBench loader: one known convolution row by hand (FLOPs and bytes of each of the three kernels),
both workbook layouts on tiny synthetic workbooks, and the shipped rows carrying DeepBench."""
from __future__ import annotations

from pathlib import Path

import pytest

from predictor_models.datasets import deepbench
from predictor_models.datasets.registry import DEFAULT_SOURCES, SOURCES

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"

# V100 'Results - FP16 ip, Mixed math', ResNet row: W=H=56, C=256, N=8, K=128, 1x1 filter, no padding,
# stride 2 (P = Q = 28); forward 0.016 ms, dgrad 0.034 ms, wgrad 0.028 ms; the sheet's 25.69 TFLOPS forward.
ROW = dict(n=8, c=256, k=128, h=56, w=56, r=1, s=1, pad_h=0, pad_w=0, stride_v=2, stride_h=2)
FLOPS = 2 * 8 * 128 * 28 * 28 * 256 * 1 * 1          # 411,041,792
X, WT, Y = 8 * 256 * 56 * 56 * 2, 128 * 256 * 1 * 1 * 2, 8 * 128 * 28 * 28 * 2   # fp16 bytes


def test_conv_kernels_by_hand():
    fwd, dgrad, wgrad = (deepbench.conv_kernel_op(kernel, **ROW, dtype="float16") for kernel in ("fwd", "dgrad", "wgrad"))
    assert FLOPS == 411_041_792 and FLOPS / 0.016e-3 == pytest.approx(25.690112e12)   # the sheet's TFLOPS
    for op in (fwd, dgrad, wgrad):
        assert op.op_class == "conv" and op.flops == FLOPS and op.dtype == "float16" and not op.tf32
        assert (op.dims["h_out"], op.dims["w_out"], op.dims["kh"], op.dims["kw"], op.dims["stride"]) == (28, 28, 1, 1, 2)
    assert (fwd.bytes_read, fwd.bytes_written) == (X + WT, Y)
    assert (dgrad.bytes_read, dgrad.bytes_written) == (Y + WT, X)
    assert (wgrad.bytes_read, wgrad.bytes_written) == (X + Y, WT)
    assert fwd.dims["backward"] == 0 and "grad" not in fwd.dims
    assert (dgrad.dims["backward"], dgrad.dims["grad"]) == (1, 1)
    assert (wgrad.dims["backward"], wgrad.dims["grad"]) == (1, 2)


def test_registered_as_a_default_source():
    assert SOURCES["deepbench"] is deepbench.load and "deepbench" in DEFAULT_SOURCES


def _workbook(path: Path, sheet: str, new_layout: bool) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    ws = book.active
    ws.title = sheet
    ws.append(["Precision", "Float"])
    ws.append(["Dense Matrix Multiplication", None, "M", "N", "K", "A Transpose", "B Transpose", None,
               "Time (msec)", "TERAFLOPS"])
    ws.append([None, "DeepSpeech", 1760, 16, 1760, "N", "T", None, 0.02, 5.0])
    ws.append([None, "DeepSpeech", 1760, 16, 1760, "N", "T", None, 0.02, 5.0])      # a repeated shape
    ws.append(["Convolution"])
    if new_layout:   # V100 / T4: filter width first, then height; horizontal padding and stride first
        ws.append([None, None, "W", "H", "C", "N", "K ", "S (Filter width)", "R (Filter height)", "pad_w", "pad_h",
                   "Horizontal stride", "Vertical stride", "Forward (msec)", "wrt Inputs (msec)",
                   "wrt Parameters (msec)", None, "P", "Q", "Total Time (msec)", "FWD TERAFLOPS",
                   "BWD INPUTS TERAFLOPS", "BWD PARMS TERAFLOPS", "Forward Algorithm"])
        ws.append([None, "DeepSpeech", 700, 161, 1, 4, 32, 20, 5, 0, 0, 2, 2, 0.078, "N/A*", 0.127, None, 341, 79,
                   0.205, 8.8, "N/A*", 5.4, "IMPLICIT_GEMM"])
    else:            # CUDA 8 workbooks: R, S, pad_h, pad_w, vertical, horizontal; fractional P, Q
        ws.append([None, None, "W", "H", "C", "N", "K ", "R", "S", "pad_h", "pad_w", "Vertical stride",
                   "Horizontal stride", "Forward (msec)", "wrt Inputs (msec)", "wrt Parameters (msec)", None, "P",
                   "Q", "Total Time (msec)", "FWD TERAFLOPS", "BWD INPUTS TERAFLOPS", "BWD PARMS TERAFLOPS",
                   "Forward Algorithm"])
        ws.append([None, None, 700, 161, 1, 4, 32, 5, 20, 0, 0, 2, 2, 0.122, 0.473, 0.257, None, 78.5, 340.5,
                   0.852, 5.6, 1.4, 2.7, "IMPLICIT_PRECOMP_GEMM"])
    ws.append(["Recurrent Layers - Vanilla", None, "Hidden Units", "N", "Timesteps", None, "Time Forward (msec)"])
    ws.append([None, "DeepSpeech", 1760, 16, 50, None, 1.0])
    path.parent.mkdir(parents=True, exist_ok=True)
    book.save(path)


@pytest.mark.parametrize("new_layout", [True, False])
def test_both_workbook_layouts(tmp_path, new_layout):
    name, sheet = (("DeepBench_NV_V100.xlsx", "Results FP32") if new_layout
                   else ("DeepBench_NV_1080Ti.xlsx", "Results - FP32"))
    _workbook(tmp_path / "deepbench" / name, sheet, new_layout)
    samples, report = deepbench.load(tmp_path)
    gemm = [s for s in samples if s.op.op_class == "gemm"]
    conv = [s for s in samples if s.op.op_class == "conv"]
    assert len(gemm) == 1 and report.excluded["duplicate of a row already loaded"] == 1
    g = gemm[0].op
    assert g.dims == {"b": 1, "m": 1760, "n": 16, "k": 1760} and g.name == "deepbench:gemm_NT"
    assert g.dtype == "float32" and not g.tf32 and gemm[0].seconds == pytest.approx(2e-5)
    kinds = [(s.op.dims["backward"], s.op.dims.get("grad", 0)) for s in conv]
    assert kinds == ([(0, 0), (1, 2)] if new_layout else [(0, 0), (1, 1), (1, 2)])
    if new_layout:
        assert report.excluded["conv dgrad: no time (N/A or not positive)"] == 1
    d = conv[0].op.dims   # filter 5 high, 20 wide on a 161 x 700 input, stride 2: output 79 x 341
    assert (d["h_in"], d["w_in"], d["kh"], d["kw"], d["h_out"], d["w_out"]) == (161, 700, 5, 20, 79, 341)
    assert conv[0].op.flops == 2 * 4 * 32 * 79 * 341 * 1 * 5 * 20
    assert {s.device for s in samples} == {"Tesla V100-SXM2-16GB" if new_layout else "GeForce GTX 1080 Ti"}
    assert any("recurrent" in note for note in report.notes)


def test_device_names_are_in_the_catalog():
    from predictor_models.hardware import lookup_hardware

    names = {lookup_hardware(device).name for device, _ in deepbench.WORKBOOKS.values()}
    assert names == {"V100-SXM2-16GB", "T4", "P100-PCIe-16GB", "GTX 1080 Ti", "TITAN Xp"}


def test_known_row_in_the_raw_workbook():
    if not (SHARED / "deepbench").is_dir():
        pytest.skip(f"raw DeepBench workbooks not found at {SHARED}")
    pytest.importorskip("openpyxl")
    samples, report = deepbench.load(SHARED)
    want = {"n": 8, "c_in": 256, "c_out": 128, "h_in": 56, "w_in": 56, "kh": 1, "kw": 1, "stride": 2}
    got = {s.op.dims.get("grad", 0): s for s in samples if s.device == "Tesla V100-SXM2-16GB"
           and s.op.dtype == "float16" and s.op.op_class == "conv"
           and all(s.op.dims[key] == value for key, value in want.items())}
    assert {grad: s.seconds for grad, s in got.items()} == pytest.approx({0: 0.016e-3, 1: 0.034e-3, 2: 0.028e-3})
    assert got[1].op.bytes_read == Y + WT and got[2].op.bytes_written == WT
    assert report.kept == len(samples) > 3000


def test_shipped_rows_carry_deepbench():
    from predictor_models.datasets.shipped import load_shipped

    samples, reports = load_shipped(("deepbench",))
    assert len(samples) == reports[0].kept > 3000 and {s.source for s in samples} == {"deepbench"}
    grads = {(s.op.op_class, s.op.dims.get("backward", 0), s.op.dims.get("grad", 0)) for s in samples}
    assert grads == {("gemm", 0, 0), ("conv", 0, 0), ("conv", 1, 1), ("conv", 1, 2)}
    assert {s.op.dtype for s in samples} == {"float32", "float16"}
