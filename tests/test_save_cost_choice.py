"""`benchmarks/save_cost_choice.py`: which runs the save constants reach, and the choice by the worst case."""
from __future__ import annotations

import json

from benchmarks.save_cost_choice import cases, choose, errors, main


def run(workload: str, *, first_file_s: float, files: int, state: float, file_s: float, run_s: float = 10.0) -> dict:
    return {"workload": workload, "framework": "loop", "repeat": 0, "actual_s": run_s,
            "saves": {"first_checkpoint_file_s": first_file_s, "first_checkpoints_s": files * first_file_s,
                      "state_bytes": state, "checkpoint_file_s": file_s, "checkpoints_actual_s": files * file_s}}


def test_only_runs_priced_with_the_constants_count(tmp_path):
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"runs": [
        run("estimated", first_file_s=0.02 + 4e6 / 400e6, files=4, state=4e6, file_s=0.005),
        run("measured", first_file_s=0.0123, files=4, state=4e6, file_s=0.0123),      # a file saved before
        {"workload": "no saves", "actual_s": 5.0, "saves": {"first_checkpoints_s": 0.0}}]}))
    found = cases([str(path)], (0.02, 400e6))
    assert [r["workload"] for r in found] == ["estimated"]
    assert abs(found[0]["files_priced"] - 4) < 1e-9


def test_the_choice_minimises_the_worst_development_error():
    runs = [{"files_priced": 10, "state_bytes": 0.0, "actual_s": 10 * 0.004, "run_s": 10.0},
            {"files_priced": 2, "state_bytes": 0.0, "actual_s": 2 * 0.010, "run_s": 1.0}]
    overhead, _ = choose(runs)
    # 4 and 10 ms a file, the second run's part weighing 2 files in 1 s against 10 in 10 s: the worst case is smallest
    # where the two errors balance, |o - 0.004| = 2 |o - 0.010|, at 8 ms
    assert abs(overhead - 0.008) < 1e-9
    assert max(abs(e) for e in errors(runs, overhead, 400e6)) < max(abs(e) for e in errors(runs, 0.02, 400e6))


def test_main_writes_the_choice_and_both_splits(tmp_path):
    dev, held = tmp_path / "dev.json", tmp_path / "held.json"
    dev.write_text(json.dumps({"runs": [run("a", first_file_s=0.02, files=6, state=0.0, file_s=0.003)]}))
    held.write_text(json.dumps({"runs": [run("b", first_file_s=0.02, files=2, state=0.0, file_s=0.004)]}))
    out = tmp_path / "choice.json"
    main(["--development", str(dev), "--held-out", str(held), "--json", str(out)])
    result = json.loads(out.read_text())
    assert result["chosen_overhead_s"] == 0.003
    assert result["figures"]["chosen"]["held_out"]["runs"] == 1
    assert result["figures"]["chosen"]["held_out"]["worst_abs"] < result["figures"]["before"]["held_out"]["worst_abs"]
