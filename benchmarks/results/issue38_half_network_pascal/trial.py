# Run from the repository root: python benchmarks/results/issue38_half_network_pascal/trial.py shipped|all (a patch of Predictor._times in this process only)
import sys, json, statistics, numpy as np
sys.path.insert(0,'.')
import predictor_models.predictor.model as M
variant = sys.argv[1]
if variant == "all":
    src = open(M.__file__).read()
    old = "netted[rows] = (devs.tensor[:, cols.mode[rows]].T > 0) | (cols.mode[rows] == _FP32)[:, None]"
    assert old in src
    orig = M.Predictor._times
    import types
    code = src[src.find("    def _times("):src.find("    def adjusted_devices(")]
    code = code.replace(old, "netted[rows] = True")
    ns = {}
    exec("from predictor_models.predictor.model import *\nfrom predictor_models.predictor.model import _FP32, _pattern_blocks, _take, _take_devices\nclass X:\n" + code, vars(M), ns)
    M.Predictor._times = ns["X"]._times
import torch
from benchmarks import projection_hostbound, predictor_physics
from prenet_callbacks.projection.pricing.predictor_source import default_predictor
from predictor_models.hardware import lookup_hardware
p = default_predictor()[0]
rows = projection_hostbound.hostbound_rows(p)
e = [abs(r["predicted_s"]/r["measured_s"]-1) for r in rows]
half = [r for r in rows if r["precision"] != "32-true"]
print(variant, "hostbound mape", round(statistics.fmean(e),4), "max", round(max(e),4))
for g in sorted({r["gpu"] for r in half}):
    eh=[r["predicted_s"]/r["measured_s"]-1 for r in half if r["gpu"]==g]; print("  half", g, round(statistics.median(eh),3), round(max(map(abs,eh)),3))
w = predictor_physics.work_violations(p, [lookup_hardware(g) for g in predictor_physics.GPUS])
print({k: v["violations"] for k, v in w.items() if k.startswith("conv")})
