"""The collective model (`fabric.Fabric`) against public measured all-reduce bus bandwidth, 2-64 GPUs.

    python benchmarks/projection_collectives.py [--data ../shared/data]

- OpenXLA's GPU collective tables (``xla_gpu_perf_tables/xla_collective_perf_table_DERIVED.csv``,
  Apache-2.0): H100 and B200 groups of 2, 4 and 8 GPUs of one node, GB200 NVL72 groups of 4-64 (one
  NVLink domain). The table's throughput is taken as algorithm bandwidth (bytes / time); bus bandwidth
  = algbw x 2 (n-1)/n as nccl-tests defines it. Largest message of each group.
- Public nccl-tests logs (``benchmarks/data/nccl_tests_public.json``, sources and licences there):
  1, 2, 4 and 8 H100 nodes with 8 x 400 Gb/s, 2 A3 Mega nodes with 8 x 200 Gb/s.
- Vidur's NCCL measurements are what the intra-node ring efficiencies were fitted on, and the
  1024-GPU ring is what the network efficiency is taken from: listed, not counted as checks.

The model's large-message bus bandwidth (`Fabric.bus_bandwidth`) is compared with each; the summary is
the mean absolute percentage error over the checks.
"""
from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from predictor_models.hardware import lookup_hardware  # noqa: E402
from prenet_callbacks.projection.parallel.fabric import target_fabric  # noqa: E402

XLA_DEVICES = {"sm_90": "H100-SXM5", "sm_100_B200": "B200", "sm_100_GB200": "GB200"}
PUBLIC = HERE / "data/nccl_tests_public.json"


def xla_points(data: Path) -> list[dict]:
    path = data / "xla_gpu_perf_tables/xla_collective_perf_table_DERIVED.csv"
    if not path.exists():
        return []
    largest: dict[tuple[str, int], dict] = {}
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            if row["opcode"] != "all-reduce" or row["device_key"] not in XLA_DEVICES:
                continue
            n = int(row["num_devices_per_group"])
            if not 2 <= n <= 64:
                continue
            size = int(row["dimensions"]) * 4  # F32 elements
            key = (row["device_key"], n)
            if key not in largest or size > largest[key]["bytes"]:
                largest[key] = {"bytes": size, "algbw": float(row["network_throughput_bytes_per_sec"])}
    out = []
    for (device, n), value in sorted(largest.items()):
        out.append({"gpu": XLA_DEVICES[device], "nodes": 1, "gpus_per_node": n, "network_gbps": None,
                    "bytes": value["bytes"], "busbw_gbs": round(value["algbw"] * 2 * (n - 1) / n / 1e9, 1),
                    "source": f"OpenXLA collective table, {device}, {value['bytes'] >> 20} MiB"})
    return out


def compare(points: list[dict]) -> list[dict]:
    rows = []
    for p in points:
        fabric = target_fabric(lookup_hardware(p["gpu"]), p["nodes"], p["gpus_per_node"], p["network_gbps"])
        predicted = fabric.bus_bandwidth("all_reduce") / 1e9
        rows.append({**p, "predicted_busbw_gbs": round(predicted, 1),
                     "ape": round(abs(predicted / p["busbw_gbs"] - 1), 4)})
    return rows


def run(data: Path) -> dict:
    public = json.loads(PUBLIC.read_text())["points"]
    rows = compare(xla_points(data) + public)
    checks = [r for r in rows if not r.get("fit") and 2 <= r["nodes"] * r["gpus_per_node"] <= 64]
    multi = [r for r in checks if r["nodes"] > 1]
    single = [r for r in checks if r["nodes"] == 1]

    def summary(values: list[dict]) -> dict:
        e = [r["ape"] for r in values]
        return {"n": len(e), "mape": round(statistics.fmean(e), 4), "median": round(statistics.median(e), 4),
                "max": round(max(e), 4)} if e else {"n": 0}

    return {"summary": {"busbw_2_64_gpus": summary(checks), "single_node": summary(single),
                        "multi_node": summary(multi)},
            "rows": rows}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(HERE.parents[1] / "shared/data"))
    result = run(Path(parser.parse_args().data))
    for r in result["rows"]:
        print(f"{r['gpu']:10s} {r['nodes']:3d}x{r['gpus_per_node']:<3d} measured {r['busbw_gbs']:7.1f}  "
              f"model {r['predicted_busbw_gbs']:7.1f} GB/s  {r['ape'] * 100:5.1f}%  {'(fit)' if r.get('fit') else ''}")
    print(result["summary"])
