"""The package layers import downwards only, and no two modules import each other.

Layers, lowest first: ``predictor_models`` -> ``prenet_callbacks`` -> ``integrations``. Every import
counts, wherever it stands: at the top, inside a function (a deferred import hides a circle, it
does not remove it) or under ``if TYPE_CHECKING:`` (a type-only circle still ties the two modules'
designs together). Dynamic imports count too: ``importlib.import_module("...")`` and ``__import__("...")``
(of a constant name, or the constant start of an f-string), and the module paths in a lazy-attribute table
(a dict whose values name project modules, ``{"Name": "package.module"}``, or ``"package.module:Name"``).
The graph is read with `ast`, so nothing is imported and the test is fast.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS: tuple[str, ...] = ("predictor_models", "prenet_callbacks", "integrations")

# Two-module circles another change is removing right now; each entry is a sorted pair of module
# names. Empty it as those changes land: a pair listed here that no longer forms a circle fails.
KNOWN_PENDING: frozenset[tuple[str, str]] = frozenset()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            found[_module_name(path)] = path
    return found


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    """Absolute name of the module an ``from ... import`` reads from (relative ones resolved)."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[:len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


# a string that names a project module, as a lazy-attribute table or an entry point writes it
_MODULE_PATH = re.compile(rf"^(?:{'|'.join(LAYERS)})(?:\.\w+)*(?::\w+)?$")


def _leading_text(node: ast.expr) -> str | None:
    """The constant text a string expression starts with: all of a constant, the head of an f-string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value).rstrip(".") or None
    return None


def _dynamic_names(node: ast.AST) -> list[str]:
    """Modules a call imports by name (``importlib.import_module``, ``__import__``) or a dict's values name."""
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if called in ("import_module", "__import__"):
            text = _leading_text(node.args[0])
            return [text] if text else []
    if isinstance(node, ast.Dict):
        texts = (_leading_text(value) for value in node.values if value is not None)
        return [text.partition(":")[0] for text in texts if text and _MODULE_PATH.match(text)]
    return []


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    """Every project module `module` imports, anywhere in its body, dynamic imports included."""
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(module, path, node)
            # ``from pkg import sub`` imports the submodule when there is one
            names = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source
                     for alias in node.names]
        else:
            names = _dynamic_names(node)
            if not names:
                continue
        for name in names:
            # ``import a.b.c`` also runs a and a.b; only the deepest project module matters here
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
    return targets


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _is_package_of(a: str, b: str) -> bool:
    """True when `a` is a package containing `b` (its ``__init__`` re-exporting `b` is fine)."""
    return b.startswith(a + ".")


def _layer(module: str) -> int:
    return LAYERS.index(module.split(".")[0])


def _circles(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    pairs = set()
    for a, targets in graph.items():
        for b in targets:
            if a in graph.get(b, ()) and not (_is_package_of(a, b) or _is_package_of(b, a)):
                pairs.add(tuple(sorted((a, b))))
    return pairs


def test_the_graph_sees_every_layer():
    graph = _graph()
    assert {m.split(".")[0] for m in graph} == set(LAYERS)
    # a deferred import is seen: predictor_models.collect imports torch-side modules in functions
    assert sum(len(t) for t in graph.values()) > len(graph)


def test_no_import_points_up_a_layer():
    graph = _graph()
    upward = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                    if _layer(b) > _layer(a))
    assert not upward, ("these imports point up a layer (predictor_models < prenet_callbacks < "
                        "integrations); move the shared piece down instead:\n" + "\n".join(upward))


def test_no_two_modules_import_each_other():
    circles = _circles(_graph())
    new = sorted(circles - KNOWN_PENDING)
    assert not new, ("these modules import each other (deferred imports included); move the shared "
                     "piece into a module both can import:\n"
                     + "\n".join(f"{a} <-> {b}" for a, b in new))
    stale = sorted(KNOWN_PENDING - circles)
    assert not stale, f"KNOWN_PENDING lists pairs that no longer form a circle; remove them: {stale}"


@pytest.mark.parametrize("module, filename, source, expected", [
    ("pkg.sub.a", "a.py", "from .b import x", "pkg.sub.b"),
    ("pkg.sub.a", "a.py", "from ..c import x", "pkg.c"),
    ("pkg.sub", "__init__.py", "from .b import x", "pkg.sub.b"),
    ("pkg.sub.a", "a.py", "from pkg.d import x", "pkg.d"),
])
def test_relative_imports_resolve(tmp_path, module, filename, source, expected):
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _resolve(module, tmp_path / filename, node) == expected


@pytest.mark.parametrize("source, expected", [
    ('import importlib\nimportlib.import_module("integrations.loop")', {"integrations.loop"}),
    ('from importlib import import_module\nimport_module("integrations.lightning")', {"integrations.lightning"}),
    ('__import__("integrations.transformers")', {"integrations.transformers"}),
    ('importlib.import_module(f"integrations.{name}")', {"integrations"}),
    ('_LAZY = {"PreNeTCallback": "integrations.lightning", "Report": "prenet_callbacks.report"}',
     {"integrations.lightning", "prenet_callbacks.report"}),
    ('ADAPTERS = {"Tracker": "integrations.loop:Tracker"}', {"integrations.loop"}),
    ('NOTES = {"a": "integrations are adapters", "b": "see prenet_callbacks.report"}', set()),
    ('importlib.import_module(name)', set()),
])
def test_dynamic_imports_are_read(tmp_path, source, expected):
    """A name imported at run time, or kept in a lazy table, is an edge of the graph like an import statement."""
    path = tmp_path / "engine.py"
    path.write_text(source)
    known = set(_modules()) | {"integrations"}
    assert _imports("prenet_callbacks.engine", path, known) == expected


def test_the_engine_resolving_an_adapter_by_module_path_is_upward(tmp_path):
    """The lazy table the engine's ``__init__`` once had (names resolved from ``integrations.*``) fails the rule."""
    path = tmp_path / "__init__.py"
    path.write_text('import importlib\n_LAZY = {"PreNeTCallback": "integrations.lightning"}\n'
                    'def __getattr__(name):\n    return getattr(importlib.import_module(_LAZY[name]), name)\n')
    targets = _imports("prenet_callbacks", path, set(_modules()))
    assert [t for t in targets if _layer(t) > _layer("prenet_callbacks")] == ["integrations.lightning"]


def test_an_uninstalled_checkout_finds_its_adapters_in_its_pyproject(monkeypatch):
    """``PYTHONPATH=.`` on a source tree has no package metadata: the adapters come from pyproject.toml's table,
    the one the metadata is built from (the engine still names no module above it)."""
    import prenet_callbacks
    from integrations.loop import Tracker

    monkeypatch.setattr(prenet_callbacks, "entry_points", lambda **_: [])
    monkeypatch.delitem(vars(prenet_callbacks), "Tracker", raising=False)
    assert prenet_callbacks._adapter("Tracker") is Tracker
    assert set(prenet_callbacks._checkout_declarations()) == set(prenet_callbacks._ADAPTERS)
    with pytest.raises(ImportError, match="pip install -e ."):
        prenet_callbacks._adapter("NotAnAdapter")
