"""Phase sampling on short steps: one marked step per `phase_sampling.PERIOD_S` of training (the default) against
one in `phase_sampling.EVERY` whatever the step's length (before 2026-12-06), and without PreNeT, in one process.

    python benchmarks/phase_period_ab.py [--workload loop_encoder_eval_checkpoints] [--rounds 3] [--json OUT]

Runs a `loop_workloads` loop with its `Tracker` (``period``: as shipped; ``every``: `PhaseSampler` built with
``period_s=None``) and without PreNeT (``none``), the order rotating round by round after a discarded warm-up
(`quiet_steps_ab.three_way`). Reported per run: the wall time, PreNeT's own time per batch and its share of the run
(``actual.own_time``). Nothing is asserted: it measures.
"""
from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.quiet_steps_ab import quiet_process, three_way  # noqa: E402
from benchmarks.result_file import write_result  # noqa: E402

MODES = ("period", "every", "none")


@contextmanager
def sampler_without_period(active: bool) -> Iterator[None]:
    """While ``active``, every `PhaseSampler` the session builds marks one step in `EVERY` (``period_s=None``)."""
    from prenet_callbacks.measure.phase_sampling import EVERY, PhaseSampler

    defaults = PhaseSampler.__init__.__defaults__
    if active:
        PhaseSampler.__init__.__defaults__ = (EVERY, None)
    try:
        yield
    finally:
        PhaseSampler.__init__.__defaults__ = defaults


def loop_fit(workload: str):
    """A `fit(mode, out)` for `three_way`: one run of ``workload`` in that mode."""
    from benchmarks.loop_workloads import run_loop

    def fit(mode: str, out: Path) -> dict:
        with sampler_without_period(mode == "every"):
            result = run_loop(workload, with_prenet=mode != "none", out_dir=str(out / mode))
        row = {"mode": mode, "fit_s": result["fit_s"]}
        if mode != "none":
            own = result["report"]["actual"]["own_time"]
            row.update(own_per_batch_us=own["per_batch_us"], own_share=own["share"])
        return row
    return fit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="loop_encoder_eval_checkpoints")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="/tmp/prenet-phase-period")
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/issue39_overhead/phase_period_ab.json"))
    args = parser.parse_args(argv)
    out = quiet_process(args.out)
    result = three_way(loop_fit(args.workload), args.rounds, out, MODES)
    write_result(args.json, "phase_period_ab", argv, workload=args.workload, rounds=args.rounds, **result)
    for mode in MODES:
        print(mode, result["summary"][mode])
    return 0


if __name__ == "__main__":
    sys.exit(main())
