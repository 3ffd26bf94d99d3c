"""What the callback costs per training batch, in microseconds, hook by hook.

    python benchmarks/session_costs.py [--json benchmarks/results/session_costs.json]

A whole-fit ratio (`overhead.py`) says whether the callback is within 1% of a run; this says where its
cost lies. Three parts, all in one process:

- the primitives a batch pays: a clock read (``time.perf_counter``) and the page-fault count
  (``getrusage``, read at batch ends on a CPU host), by ``timeit``, and the same right after a real training
  step (``after_a_step``), where they cost far more and ``getrusage`` of the whole process has a long tail;
- a real Lightning fit (`workloads.mlp_validation_every_200`, its default callback): every ``on_*``
  hook of `PreNeTCallback` is wrapped in a timer, and each hook's time per call is reported after the
  profiling window (the steady state a run spends nearly all its batches in) and over the whole fit
  (warm-up, the window, the first prediction with its projection and page, and the end);
- a plain loop with a `Tracker`: the time of each ``tracker.step()`` call, after the window and whole;
- a real plain-loop workload (`loop_workloads`, default ``loop_encoder_loader_epochs``: a transformer encoder
  over DataLoader epochs, ~9 ms a step) with a `Tracker`: each of the Tracker's hooks (``step``, the model's
  forward pre-hook and hook, the optimizer's step pre-hook) timed per call, with the run's own account
  (``actual.own_time``). Its hooks run right after a real forward and backward, with the CPU's caches cold
  for PreNeT's code: they cost several times what the same code costs in the tight loop above.

The wrappers add a clock read per call themselves (reported as ``timer_us``): subtract it to read a hook's cost.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import timeit
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
_STEADY_FROM = 60   # batches: warm-up, the profiling window and the timing window end well before


def primitives() -> dict[str, float]:
    """Microseconds per call of what a batch pays every time."""
    import resource

    number = 200_000
    clock = min(timeit.repeat(time.perf_counter, number=number, repeat=5)) / number
    faults = min(timeit.repeat(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt, number=number,
                               repeat=5)) / number
    return {"perf_counter_us": round(clock * 1e6, 3), "getrusage_us": round(faults * 1e6, 3),
            "timer_us": round(2 * clock * 1e6, 3)}


def after_a_step(steps: int = 600) -> dict[str, dict[str, float]]:
    """Microseconds of the same primitives right after a real training step (a transformer encoder's, ~9 ms),
    in turns, with the CPU's caches cold for them: what a batch end pays. ``getrusage`` of the whole process and
    ``/proc/self/stat`` sum the process's CPU time over its threads; ``RUSAGE_THREAD`` reads the calling thread."""
    import resource

    import torch

    from examples.plain_loop import Regressor

    torch.manual_seed(0)
    model, x = Regressor(), torch.randn(16, 32, 64)
    optimizer, target = torch.optim.AdamW(model.parameters()), x.mean(dim=1)[:, :1]
    stat = os.open("/proc/self/stat", os.O_RDONLY)
    reads = {"perf_counter": time.perf_counter,
             "getrusage_self": lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt,
             "getrusage_thread": lambda: resource.getrusage(resource.RUSAGE_THREAD).ru_minflt,
             "proc_self_stat": lambda: os.pread(stat, 1024, 0)}
    seconds: dict[str, list[float]] = {name: [] for name in reads}
    names = list(reads)
    try:
        for index in range(steps):
            torch.nn.functional.mse_loss(model(x), target).backward()
            optimizer.step()
            optimizer.zero_grad()
            name = names[index % len(names)]
            started = time.perf_counter()
            reads[name]()
            seconds[name].append(time.perf_counter() - started)
    finally:
        os.close(stat)
    out = {}
    for name, values in seconds.items():
        values.sort()
        out[name] = {"median_us": round(statistics.median(values) * 1e6, 2),
                     "p90_us": round(values[int(0.9 * (len(values) - 1))] * 1e6, 2),
                     "mean_us": round(statistics.fmean(values) * 1e6, 2), "calls": len(values)}
    return out


def _timed_hooks(callback: Any) -> dict[str, list[tuple[int, float]]]:
    """Wrap every ``on_*`` method of `callback`: per hook, ``(batch index, seconds)`` of each call."""
    calls: dict[str, list[tuple[int, float]]] = {}
    batch = [0]
    for name in dir(type(callback)):
        if not name.startswith("on_") or not callable(getattr(callback, name, None)):
            continue
        original = getattr(callback, name)

        def timed(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                calls.setdefault(_name, []).append((batch[0], time.perf_counter() - started))
                if _name == "on_train_batch_end":
                    batch[0] += 1

        setattr(callback, name, timed)
    return calls


def _summary(calls: list[tuple[int, float]]) -> dict[str, Any]:
    steady = [s for index, s in calls if index >= _STEADY_FROM]
    whole = [s for _, s in calls]
    return {"calls": len(whole), "steady_median_us": round(statistics.median(steady) * 1e6, 2) if steady else None,
            "steady_mean_us": round(statistics.fmean(steady) * 1e6, 2) if steady else None,
            "whole_total_ms": round(sum(whole) * 1e3, 2), "largest_call_ms": round(max(whole) * 1e3, 2)}


def lightning_hooks(out_dir: str) -> dict[str, Any]:
    import lightning.pytorch as pl

    from benchmarks.workloads import WORKLOADS, build_trainer
    from prenet_callbacks import PreNeTCallback

    pl.seed_everything(0, verbose=False)
    module, train, val, settings = WORKLOADS["mlp_validation_every_200"]()
    callback = PreNeTCallback(report_path=f"{out_dir}/lightning/prenet_report.json", print_report=False)
    calls = _timed_hooks(callback)
    started = time.perf_counter()
    build_trainer(f"{out_dir}/lightning", [callback], settings).fit(module, train, val)
    fit_s = time.perf_counter() - started
    hooks = {name: _summary(rows) for name, rows in sorted(calls.items())}
    per_batch = [name for name in ("on_train_batch_start", "on_before_backward", "on_after_backward",
                                   "on_before_optimizer_step", "on_train_batch_end") if name in hooks]
    steady = sum(hooks[name]["steady_median_us"] or 0.0 for name in per_batch)
    total_ms = sum(h["whole_total_ms"] for h in hooks.values())
    return {"workload": "mlp_validation_every_200", "fit_s": round(fit_s, 3), "hooks": hooks,
            "per_batch_hooks": per_batch, "steady_per_batch_us": round(steady, 2),
            "all_hooks_total_ms": round(total_ms, 2), "all_hooks_share_of_fit": round(total_ms / 1e3 / fit_s, 5)}


def tracker_steps(out_dir: str, steps: int = 3000) -> dict[str, Any]:
    import torch

    from prenet_callbacks import Tracker

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    optimizer = torch.optim.AdamW(model.parameters())
    tracker = Tracker(total_steps=steps, model=model, optimizer=optimizer, report_path=f"{out_dir}/loop/r.json",
                      print_report=False)
    calls: list[tuple[int, float]] = []
    started = time.perf_counter()
    for index in range(steps):
        x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
        before = time.perf_counter()
        tracker.step()
        calls.append((index, time.perf_counter() - before))
    before = time.perf_counter()
    tracker.close()
    close_s = time.perf_counter() - before
    fit_s = time.perf_counter() - started
    return {"steps": steps, "fit_s": round(fit_s, 3), "step": _summary(calls), "close_ms": round(close_s * 1e3, 2),
            "share_of_loop": round((sum(s for _, s in calls) + close_s) / fit_s, 5)}


_PARTS = ("primitives", "after_a_step", "lightning", "tracker", "tracker_hooks")
_TRACKER_HOOKS = ("step", "_on_forward_pre", "_on_forward", "_on_optimizer_pre", "close")


def tracker_hooks(out_dir: str, workload: str = "loop_encoder_loader_epochs", scale: float = 1.0) -> dict[str, Any]:
    """One run of a plain-loop workload with its Tracker's hooks timed (class-level wrappers, undone after)."""
    from benchmarks.loop_workloads import run_loop
    from prenet_callbacks import Tracker

    calls: dict[str, list[tuple[int, float]]] = {name: [] for name in _TRACKER_HOOKS}
    originals = {name: Tracker.__dict__[name] for name in _TRACKER_HOOKS}

    def timed(name: str, original: Any) -> Any:
        def hook(self: Any, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(self, *args, **kwargs)
            finally:
                calls[name].append((self.run.steps, time.perf_counter() - started))
        return hook

    for name, original in originals.items():
        setattr(Tracker, name, timed(name, original))
    try:
        result = run_loop(workload, with_prenet=True, out_dir=out_dir, scale=scale)
    finally:
        for name, original in originals.items():
            setattr(Tracker, name, original)
    steps = result["steps"]
    hooks = {name: _summary(rows) for name, rows in calls.items() if rows}
    for name, rows in calls.items():
        if name in hooks and name != "close":
            steady = [s for index, s in rows if index >= _STEADY_FROM]
            hooks[name]["steady_calls_per_step"] = round(len(steady) / max(1, steps - _STEADY_FROM), 3)
            hooks[name]["steady_us_per_step"] = round(sum(steady) / max(1, steps - _STEADY_FROM) * 1e6, 2)
    per_step = sum(h.get("steady_us_per_step", 0.0) for h in hooks.values())
    own = result["report"].actual.get("own_time") if result["report"] is not None else None
    return {"workload": workload, "scale": scale, "steps": steps, "fit_s": round(result["fit_s"], 3),
            "step_ms": round(result["fit_s"] / max(1, steps) * 1e3, 3), "hooks": hooks,
            "steady_us_per_step": round(per_step, 2), "own_time": own}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/session_costs.json"))
    parser.add_argument("--out", default="/tmp/prenet-session-costs")
    parser.add_argument("--parts", nargs="*", default=list(_PARTS), choices=list(_PARTS),
                        help="which parts to run (default: all)")
    parser.add_argument("--workload", default="loop_encoder_loader_epochs", help="the tracker_hooks part's loop")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import torch

    torch.set_num_threads(int(os.environ.get("PRENET_BENCH_THREADS", "1")))
    command = "python benchmarks/session_costs.py" + ("" if args.parts == list(_PARTS) else
                                                       f" --parts {' '.join(args.parts)}")
    if args.workload != "loop_encoder_loader_epochs":
        command += f" --workload {args.workload}"
    result: dict[str, Any] = {"benchmark": "session_costs", "command": command, "date": time.strftime("%Y-%m-%d %H:%M")}
    runs = {"primitives": primitives, "after_a_step": after_a_step, "lightning": lambda: lightning_hooks(args.out),
            "tracker": lambda: tracker_steps(args.out), "tracker_hooks": lambda: tracker_hooks(args.out, args.workload)}
    for part in args.parts:
        result[part] = runs[part]()
    print(json.dumps(result, indent=1))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
