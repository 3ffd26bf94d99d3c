"""The public training rows that ship with the package: licences and attribution beside them, the
same rows as the raw source folders (where those exist), used by default by train and evaluate,
and the row-file format (schema line, compression, exact round trip)."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from predictor_models.datasets import RowsError, Sample, load_all, read_rows, write_rows
from predictor_models.datasets.common import gemm_op
from predictor_models.datasets.shipped import (LICENSED_SOURCES, SHIPPED_DIR, ShippedDataError, load_shipped,
                                               read_manifest, shipped_label_rows)

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def test_shipped_files_are_small_licensed_and_attributed():
    manifest = read_manifest()
    total = sum(p.stat().st_size for p in SHIPPED_DIR.rglob("*") if p.is_file())
    assert total < 20 * 2**20 and manifest["rows"] > 200_000
    assert [r["source"] for r in manifest["reports"]] == ["neusight", "xla", "vidur", "deepbench"] == list(LICENSED_SOURCES)
    for name, source in manifest["sources"].items():
        text = (SHIPPED_DIR / source["licence_file"]).read_text()
        assert source["licence"] in ("MIT", "Apache-2.0")
        assert ("Permission is hereby granted" if source["licence"] == "MIT" else "Apache License") in text
        assert source["commit"] in (SHIPPED_DIR / "NOTICE.md").read_text(), name
    notice = (SHIPPED_DIR / "NOTICE.md").read_text()
    assert "Georgia Institute of Technology" in notice and "Microsoft Corporation" in notice and "OpenXLA" in notice
    assert "Baidu Research" in notice


def test_shipped_rows_load_by_source_in_order():
    samples, reports = load_shipped(("xla",))
    assert len(samples) == reports[0].kept == 1500 and {s.source for s in samples} == {"xla"}
    assert reports[0].excluded["fp8 GEMM (not modelled)"] == 2250
    with pytest.raises(ShippedDataError, match="'justus' is not in the shipped rows.*--data DIR"):
        load_shipped(("justus",))
    labels = list(shipped_label_rows())
    assert labels and {"device", "model", "op", "fw_latency"} <= set(labels[0])


@pytest.mark.slow
def test_shipped_rows_equal_the_raw_folders():
    if not (SHARED / "neusight").is_dir():
        print(f"skipped: the raw source folders are not at {SHARED} (as in CI); the shipped rows are checked "
              "against them where they exist")
        pytest.skip(f"raw source folders not found at {SHARED}")
    from predictor_models.datasets.neusight_labels import load_labels

    sources = tuple(LICENSED_SOURCES)
    try:
        import openpyxl  # noqa: F401
    except ImportError:
        # Without the `data` extra the raw DeepBench workbooks cannot be read; the other sources still can.
        print("openpyxl is not installed: the DeepBench rows are not compared with the raw workbooks")
        sources = tuple(s for s in sources if s != "deepbench")
    shipped, shipped_reports = load_shipped(sources)
    raw, raw_reports = load_all(SHARED, sources)
    assert len(shipped) == len(raw)
    for a, b in zip(shipped, raw):
        assert (a.device, a.source, a.seconds, a.op, a.op.dims, a.op.tf32, a.op.name) == \
               (b.device, b.source, b.seconds, b.op, b.op.dims, b.op.tf32, b.op.name)
    assert [r.as_dict() for r in shipped_reports] == [r.as_dict() for r in raw_reports]
    a, b = load_labels(), load_labels(SHARED)
    assert [(s.device, s.model, [(n.name, n.kind, n.fw_ms, n.bw_ms, n.forward, n.backward) for n in s.nodes])
            for s in a] == [(s.device, s.model, [(n.name, n.kind, n.fw_ms, n.bw_ms, n.forward, n.backward)
                                                 for n in s.nodes]) for s in b]


def test_altered_shipped_files_are_refused(tmp_path):
    copy = tmp_path / "public_data"
    shutil.copytree(SHIPPED_DIR, copy)
    (copy / "labels.csv.xz").write_bytes(b"not the file")
    with pytest.raises(ShippedDataError, match="labels.csv.xz: missing or not the file the manifest describes"):
        load_shipped(folder=copy)
    (copy / "manifest.json").unlink()
    with pytest.raises(ShippedDataError, match="missing or unreadable.*reinstall"):
        load_shipped(folder=copy)


def test_training_reads_the_shipped_rows_by_default(tmp_path, capsys):
    from predictor_models.train import TrainError, load_training_set, main

    ts, reports = load_training_set(None, ["xla"], None)
    assert len(ts) == 1500 and {str(g) for g in ts.gpu} == {"H100-SXM5", "B200"} and reports[0].source == "xla"
    with pytest.raises(TrainError, match="not in the shipped rows"):
        load_training_set(None, ["justus"], None)
    assert main(["--out", str(tmp_path / "p"), "--sources", "justus"]) == 2
    assert "--data DIR" in capsys.readouterr().err


def test_row_files_round_trip_exactly_compressed_or_not(tmp_path):
    samples = [Sample(gemm_op(1, 64 * i, 96, 160, "bfloat16", name="aten::mm"), "H100-SXM5", 1e-5 / 3 * i, "collect")
               for i in range(1, 6)]
    for name in ("a.csv", "b.csv.xz", "c.csv.gz"):
        write_rows(tmp_path / name, samples)
        got = read_rows([tmp_path / name])
        assert [(s.op, s.op.dims, s.seconds) for s in got] == [(s.op, s.op.dims, s.seconds) for s in samples]
    assert (tmp_path / "a.csv").read_text().startswith("#schema=prenet-rows/1\ndevice,source,")
    assert len(read_rows([tmp_path])) == 15
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "old.csv").write_text((tmp_path / "a.csv").read_text().split("\n", 1)[1])   # before the schema line
    assert len(read_rows([legacy])) == 5
    (legacy / "new.csv.gz").write_bytes(gzip.compress(b"#schema=prenet-rows/2\ndevice\n"))
    with pytest.raises(RowsError, match=r"new.csv.gz: rows of schema 'prenet-rows/2'.*prenet collect"):
        read_rows([legacy])


def test_manifest_matches_what_the_build_writes():
    manifest = json.loads((SHIPPED_DIR / "manifest.json").read_text())
    assert manifest["built_with"] == "python -m predictor_models.datasets.shipped --data ../shared/data"
    assert manifest["sources"] == LICENSED_SOURCES
