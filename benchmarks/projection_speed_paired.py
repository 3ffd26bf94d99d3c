"""Projection speed of two checkouts, one projection at a time in turn: a change smaller than the machine's swing.

    python benchmarks/projection_speed_paired.py --against DIR [--pairs 100] [--layouts 10] [--layers 500] [--out PATH]
    python benchmarks/projection_speed_paired.py --against DIR --predictor [--pairs 100] [--out PATH]

`projection_speed.py` times whole processes one after another; on a shared machine a process can run ~1.5x slower
than the next, so a change of a few percent hides in the spread between its rounds. Here two warm processes, one
running this checkout's code and one running DIR's (another checkout or worktree, e.g. ``git worktree add /tmp/base
HEAD~3``), each time one projection of a fresh report at a time, in turn (the order flips pair by pair), so both
sides of a pair meet the same moment of the machine. It reports each side's median with quartiles and the paired
ratio (this checkout / DIR) with quartiles and the share of pairs this checkout won. DIR only needs
`benchmarks/projection_speed.py` with `synthetic_report` and `targets`, as every checkout since session 53 has.

``--predictor`` times `predict_matrix` instead, on `benchmarks/predictor_speed.py`'s 10,000 ops and 40 devices (its
budget is 100 ms): the same pairs for the predictor alone.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WARM_UP = 3   # projections each process runs before the pairs (imports, catalog, predictor and caches warm)


def serve(root: str, layers: int, n_targets: int, layouts: int, predictor_only: bool = False) -> None:
    """One side: the checkout at ``root`` on the import path first; a projection (``predictor_only``: a
    `predict_matrix` of the predictor benchmark) timed per line read."""
    sys.path.insert(0, root)
    if predictor_only:
        _serve_predictor()
        return
    from benchmarks.projection_speed import synthetic_report, targets
    from prenet_callbacks.projection import project_report
    from prenet_callbacks.projection.pricing.predictor_source import default_predictor

    predictor, _ = default_predictor()
    names = targets(n_targets, layouts)
    for _ in range(WARM_UP):
        project_report(synthetic_report(layers), names, predictor=predictor)
    print("ready", flush=True)
    for _ in sys.stdin:
        report = synthetic_report(layers)
        start = time.perf_counter()
        project_report(report, names, predictor=predictor)
        print(time.perf_counter() - start, flush=True)


def _serve_predictor() -> None:
    from benchmarks.predictor_speed import mixed_ops
    from predictor_models.hardware import list_hardware
    from predictor_models.predictor import load_predictor

    predictor = load_predictor(None)
    devices = [d for d in list_hardware() if d.memory_bandwidth_gbs][:40]
    ops = mixed_ops(10_000)
    for _ in range(WARM_UP):
        predictor.predict_matrix(ops, devices)
    print("ready", flush=True)
    for _ in sys.stdin:
        start = time.perf_counter()
        predictor.predict_matrix(ops, devices)
        print(time.perf_counter() - start, flush=True)


def _quartiles(values: list[float]) -> list[float]:
    q1, q2, q3 = statistics.quantiles(values, n=4) if len(values) > 1 else values * 3
    return [q1, q2, q3]


def summarise(this_s: list[float], other_s: list[float]) -> dict:
    """Each side's median and quartiles (ms), and the pairs' ratios this / other: median, quartiles, share below 1."""
    if len(this_s) != len(other_s) or not this_s:
        raise ValueError("one time per side and pair, at least one pair")
    ratios = [a / b for a, b in zip(this_s, other_s)]
    ms = lambda values: [round(v * 1e3, 2) for v in _quartiles(values)]  # noqa: E731
    return {"pairs": len(ratios), "this_ms_quartiles": ms(this_s), "other_ms_quartiles": ms(other_s),
            "this_median_ms": round(statistics.median(this_s) * 1e3, 2),
            "other_median_ms": round(statistics.median(other_s) * 1e3, 2),
            "ratio_median": round(statistics.median(ratios), 4),
            "ratio_quartiles": [round(v, 4) for v in _quartiles(ratios)],
            "share_faster": round(sum(r < 1.0 for r in ratios) / len(ratios), 3)}


def run_pairs(roots: tuple[str, str], pairs: int, layers: int, n_targets: int, layouts: int,
              predictor_only: bool = False) -> tuple[list, list]:
    """``pairs`` projections on each side, in turn; returns (seconds of roots[0], seconds of roots[1])."""
    command = [sys.executable, str(Path(__file__).resolve()), "--serve", "--layers", str(layers), "--targets",
               str(n_targets), "--layouts", str(layouts)] + (["--predictor"] if predictor_only else []) + ["--root"]
    sides = [subprocess.Popen(command + [root], cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for root in roots]
    times: tuple[list, list] = ([], [])
    try:
        for side in sides:
            if side.stdout.readline().strip() != "ready":
                raise RuntimeError("a side did not start: run it alone with --serve --root DIR to see why")
        for i in range(pairs):
            for j in ((0, 1) if i % 2 == 0 else (1, 0)):   # the order flips pair by pair
                sides[j].stdin.write("go\n")
                sides[j].stdin.flush()
                times[j].append(float(sides[j].stdout.readline()))
    finally:
        for side in sides:
            side.stdin.close()
            side.wait()
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="the other checkout's root (a worktree of the code before)")
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--layers", type=int, default=500)
    parser.add_argument("--targets", type=int, default=40)
    parser.add_argument("--layouts", type=int, default=10, help="how many of the targets are layouts (default 10)")
    parser.add_argument("--predictor", action="store_true",
                        help="time predict_matrix on the predictor benchmark's 10,000 ops x 40 devices instead")
    parser.add_argument("--out", default=None, help="default: results/projection_speed_paired.json "
                                                    "(--predictor: results/predictor_speed_paired.json)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.root, args.layers, args.targets, args.layouts, args.predictor)
        return 0
    if not args.against or not (Path(args.against) / "benchmarks" / "projection_speed.py").is_file():
        parser.error("--against DIR: the root of another checkout holding benchmarks/projection_speed.py "
                     "(e.g. git worktree add /tmp/base HEAD~1)")
    this_root, other_root = str(HERE.parent), str(Path(args.against).resolve())
    this_s, other_s = run_pairs((this_root, other_root), args.pairs, args.layers, args.targets, args.layouts,
                                args.predictor)
    # imported here, not above: a serving side must import the `benchmarks` package of its own checkout
    sys.path.insert(0, this_root)
    from benchmarks.result_file import write_result

    if args.predictor:
        default, fields = "predictor_speed_paired.json", {"timed": "predict_matrix", "ops": 10_000, "devices": 40}
        budget_ms = 100
    else:
        default, fields = "projection_speed_paired.json", {"layers": args.layers, "targets": args.targets,
                                                           "layout_targets": args.layouts}
        budget_ms = 50
    print(write_result(args.out or str(HERE / "results" / default), "projection_speed_paired", argv, against=other_root,
                       **fields, **summarise(this_s, other_s), target_ms=budget_ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
