"""Every figure the README and docs quote agrees with the committed result that produced it.

The table is `benchmarks/published_figures.py` (``python -m benchmarks.published_figures`` lists each figure
with OK / MISMATCH). A new result needs new words in the doc: never edit a result to match a doc.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks import published_figures as pf

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("quote", pf.QUOTES, ids=lambda q: f"{q.doc}:{' '.join(q.text.split())[:60]}")
def test_doc_quotes_the_committed_result(quote: pf.Q) -> None:
    """The doc has these words, and each figure in them is the result's value at the quoted rounding."""
    try:
        rows = pf.check(quote)
    except pf.Unavailable as exc:           # a historical file whose commit this checkout lacks
        pytest.skip(str(exc))
    bad = [f"{r.source}: the doc says {r.quoted!r}, the result gives {r.computed!r}" for r in rows
           if r.status != "OK"]
    assert not bad, f"{quote.doc}, '{' '.join(quote.text.split())}':\n" + "\n".join(bad)


def test_every_listed_doc_is_covered() -> None:
    """The README, the accuracy/overhead/projection/GPU pages and the model card each have figures in the table."""
    docs = {q.doc for q in pf.QUOTES}
    for doc in (pf.README, pf.ACCURACY, pf.OVERHEAD, pf.PROJECTION, pf.GPU_RUNS, pf.CARD, pf.HOW):
        assert doc in docs and (ROOT / doc).exists(), doc


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The module reading docs and results under ``tmp_path``."""
    monkeypatch.setattr(pf, "ROOT", tmp_path)
    pf.load.cache_clear(), pf.doc_text.cache_clear()
    yield tmp_path
    pf.load.cache_clear(), pf.doc_text.cache_clear()


def _status(root: Path, doc: str, value: float, fmt: pf.Fmt = pf.PCT1) -> str:
    (root / "doc.md").write_text(doc)
    (root / "r.json").write_text(json.dumps({"summary": {"x": value}}))
    pf.load.cache_clear(), pf.doc_text.cache_clear()
    [row] = pf.check(pf.Q("doc.md", "median {}% over", pf.F("r.json", "summary.x", fmt)))
    return row.status


def test_a_doc_and_a_result_that_disagree_fail(sandbox: Path) -> None:
    """The check fails on a wrong figure, on moved words, and passes only at the quoted rounding."""
    assert _status(sandbox, "a median 12.3% over\nfive fits", 0.1234) == "OK"
    assert _status(sandbox, "a median 12.4% over five fits", 0.1234) == "MISMATCH"
    assert _status(sandbox, "a median of 12.3% over five fits", 0.1234) == "MISSING"
    assert _status(sandbox, "a median 12% over", 0.1234) == "MISMATCH"
    assert _status(sandbox, "a median +12.3% over", 0.1234, pf.SPCT1) == "OK"


def test_a_stored_value_halfway_accepts_either_rounding(sandbox: Path) -> None:
    """0.0985 (itself rounded) may be quoted 9.8% or 9.9%, nothing else; 0.09851 only 9.9%."""
    assert _status(sandbox, "median 9.8% over", 0.0985) == "OK"
    assert _status(sandbox, "median 9.9% over", 0.0985) == "OK"
    assert _status(sandbox, "median 9.7% over", 0.0985) == "MISMATCH"
    assert _status(sandbox, "median 9.8% over", 0.09851) == "MISMATCH"


def test_rows_and_the_listing(sandbox: Path, capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`rows` gives (doc, quoted, computed); the script prints OK / MISMATCH and exits 1 on a mismatch."""
    (sandbox / "doc.md").write_text("ran x1.005 once and 3.1% median over")
    (sandbox / "r.json").write_text(json.dumps({"ratio": 1.0053, "err": 0.0309}))
    quotes = [pf.Q("doc.md", "ran x{} once", pf.F("r.json", "ratio", pf.num(3))),
              pf.Q("doc.md", "and {}% median", pf.F("r.json", "err", pf.PCT0))]
    assert pf.rows(quotes) == [("doc.md", "1.005", "1.005"), ("doc.md", "3.1", "3")]
    monkeypatch.setattr(pf, "QUOTES", quotes)
    assert pf.main([]) == 1
    out = capsys.readouterr().out
    assert "OK        doc.md:    1.005 -> 1.005" in out and "MISMATCH  doc.md:      3.1 -> 3" in out


def test_readme_is_short_and_starts_with_the_two_commands() -> None:
    """At most 160 lines; the first thing after the title is the demo and test commands."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 160, len(lines)
    body = [line for line in lines[1:] if line.strip()]
    assert body[0] == "```bash"
    assert body[1].startswith("bash scripts/demo.sh") and body[2].startswith("bash scripts/test.sh")
    assert any(line.startswith("| what | figure | command | details |") for line in lines)
