"""Trial (2026-12-05, issue 38): a monotone streaming network for elementwise and norm ops, judged leave-one-GPU-out.

    python benchmarks/results/issue38_stream_trial/stream_trial.py [--work-only]
                                                (about 90 s; writes logo.json, or logo_work_only.json, beside it)

A `MonoNet` (`predictor/mono.py`, fitted by `mono_fit.fit_mono` with NeuSight's host lag learnt per GPU) on every
elementwise and norm row of the shipped training set, all dtypes, with inputs that grow with the work and with the
device's weakness (time at DRAM bandwidth and at the fp32 vector peak, elements, waves of 1,024-element blocks over
the SMs, rows, columns, bytes over L2, FLOPs per board watt) and free inputs (half precision, norm, softmax,
transcendental). Against the per-class MLPs refitted on the same rows (one member each), on the half-precision
(Vidur fp16) rows of each of its three GPUs held out in turn. Not kept: the network is worse on all three.
"""
import json
import sys
import time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import numpy as np
from predictor_models.train import load_training_set
from predictor_models.predictor.training import balanced_rows, HOST_LAG_SOURCES, fit_models, class_xy
from predictor_models.predictor.bound import paired, bound_seconds
from predictor_models.predictor.mono_fit import fit_mono
from predictor_models.predictor.mlp import predict_mlp

BLOCK = 1024.0  # elements a thread block streams (256 threads x 4)

def _log(x): return np.log(np.maximum(x, 1e-30))

WORK_ONLY = "--work-only" in sys.argv   # monotone in the work only: the device's figures as free inputs


def stream_features(p):
    numel = np.maximum(p.dim("numel"), 1.0)
    rows, cols = np.maximum(p.dim("rows"), 1.0), np.maximum(p.dim("cols"), 1.0)
    has_rc = (p.dim("rows") > 0) & (p.dim("cols") > 0)
    elems = np.where(has_rc, rows * cols, numel)
    rows = np.where(has_rc, rows, elems)
    cols = np.where(has_rc, cols, 1.0)
    blocks = np.ceil(elems / BLOCK)
    waves = blocks / p.dev.sms
    mono = [_log(p.ops.bytes / p.dev.bandwidth), _log((p.ops.flops + 1.0) / p.peak), _log(elems),
            _log(waves), _log(np.ceil(waves)), _log(rows), _log(cols), _log(p.ops.bytes / p.dev.l2_bytes)]
    z = 0.0 * elems
    free = [(p.ops.esize == 2) + z, (p.ops.op_class == "norm") + z, p.ops.softmax + z, p.ops.heavy + z]
    if WORK_ONLY:
        free += [np.log2(p.dev.sms) + z, np.log2(p.dev.bandwidth / 1e12) + z, np.log2(p.dev.l2_bytes / 1e6) + z,
                 np.log2(p.peak / p.dev.bandwidth) + z, np.log2(p.dev.tdp_w) + z]
    else:
        mono.append(_log((p.ops.flops + 1.0) / p.dev.tdp_w))
    return mono, free


def flat(cols, shape):
    return np.stack([np.broadcast_to(np.asarray(c, dtype=np.float64), shape).reshape(-1) for c in cols], axis=1)

def fit_stream(ts, rows, seed=0):
    sub = ts.take(balanced_rows(ts, rows, cap=4000, seed=seed))
    p = paired(sub.ops, sub.devices)
    mono, free = stream_features(p)
    names = sorted({f"{s}|{g}" for s, g in zip(sub.source, sub.gpu) if s in HOST_LAG_SOURCES})
    index = {n: i for i, n in enumerate(names)}
    group = np.array([index.get(f"{s}|{g}", -1) for s, g in zip(sub.source, sub.gpu)], dtype=np.int64)
    return fit_mono(flat(mono, p.shape), flat(free, p.shape), sub.seconds, lag_group=group, lag_names=names, seed=seed)

def stream_predict(net, ts_or_pairs):
    p = ts_or_pairs
    mono, free = stream_features(p)
    b = bound_seconds(p)
    return np.maximum(np.asarray(b).reshape(-1), np.exp(net(flat(mono, p.shape), flat(free, p.shape))))

def mlp_predict(models, ts, rows):
    out = np.zeros(rows.size)
    for cls in ("elementwise", "norm"):
        r = rows[ts.ops.op_class[rows] == cls]
        if r.size == 0:
            continue
        x, _ = class_xy(ts, cls, r)
        lr = sum(predict_mlp(m, x) for m in models[cls]) / len(models[cls])
        out[np.searchsorted(rows, r)] = ts.bound[r] * np.exp(np.maximum(lr, 0.0))
    return out

if __name__ == "__main__":
    t0 = time.time()
    ts, _ = load_training_set(None, None, None)
    cls_rows = np.flatnonzero(np.isin(ts.ops.op_class, ["elementwise", "norm"]))
    half = cls_rows[ts.ops.esize[cls_rows] == 2]
    gpus = sorted(set(ts.gpu[half]))
    result = {}
    for gpu in gpus:
        train = cls_rows[ts.gpu[cls_rows] != gpu]
        test = half[ts.gpu[half] == gpu]
        t = time.time(); net = fit_stream(ts, train); tn = time.time() - t
        sub = ts.take(test)
        pred_net = stream_predict(net, paired(sub.ops, sub.devices))
        t = time.time(); models = fit_models(ts.take(train), classes=["elementwise", "norm"], members=1); tm = time.time() - t
        pred_mlp = mlp_predict(models, ts, test)
        meas = ts.seconds[test]
        def mape(p): return float(np.mean(np.abs(p / meas - 1.0)))
        def med(p): return float(np.median(p / meas))
        res = {"rows": int(test.size), "net_mape": round(mape(pred_net), 3), "net_median_ratio": round(med(pred_net), 3),
               "mlp_mape": round(mape(pred_mlp), 3), "mlp_median_ratio": round(med(pred_mlp), 3),
               "fit_s": [round(tn), round(tm)]}
        for cls in ("elementwise", "norm"):
            m = ts.ops.op_class[test] == cls
            if m.any():
                res[cls] = {"rows": int(m.sum()), "net": round(float(np.mean(np.abs(pred_net[m] / meas[m] - 1))), 3),
                            "mlp": round(float(np.mean(np.abs(pred_mlp[m] / meas[m] - 1))), 3)}
        result[gpu] = res
        print(gpu, json.dumps(res), flush=True)
    json.dump(result, open(str(Path(__file__).with_name("logo_work_only.json" if WORK_ONLY else "logo.json")), "w"), indent=1)
    print("total s", round(time.time() - t0))
