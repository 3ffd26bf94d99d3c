"""The engine's rooms stay findable and its functions short (docs/architecture.md).

At most 12 modules at the engine's top level and 20 in any of its folders; every folder is a package whose
docstring says what it holds, and every module is named in docs/architecture.md under its room; no function
over 60 lines, from its ``def`` to its last line, docstring included. Read with `ast` and the file system:
nothing is imported.
"""
from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "prenet_callbacks"
ARCHITECTURE = ENGINE.parent / "docs" / "architecture.md"
# folders docs/architecture.md describes as a whole, without naming each module
DESCRIBED_AS_A_WHOLE = {"cli", "html/charts", "measure/profiling", "report_parts"}
TOP_LEVEL_MODULES = 12
MODULES_PER_FOLDER = 20
FUNCTION_LINES = 60


def _folders() -> list[Path]:
    return [ENGINE] + sorted(p for p in ENGINE.rglob("*") if p.is_dir() and p.name != "__pycache__"
                             and any(p.glob("*.py")))


def _modules(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.py"))


def long_functions(path: Path, root: Path = ENGINE.parent, limit: int = FUNCTION_LINES) -> list[str]:
    """``file:line name (N lines)`` for each function or method of ``path`` longer than ``limit`` lines."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            if lines > limit:
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_the_top_level_holds_few_modules():
    modules = _modules(ENGINE)
    assert len(modules) <= TOP_LEVEL_MODULES, f"{len(modules)} modules at the top of the engine: {modules}"


def test_no_folder_holds_more_than_twenty_modules():
    crowded = {str(f.relative_to(ENGINE.parent)): len(_modules(f)) for f in _folders()
               if len(_modules(f)) > MODULES_PER_FOLDER}
    assert not crowded, f"split these folders by stage (docs/architecture.md): {crowded}"


def test_every_folder_is_a_package_that_says_what_it_holds():
    silent = [str(f.relative_to(ENGINE.parent)) for f in _folders()
              if not (f / "__init__.py").is_file() or not ast.get_docstring(ast.parse((f / "__init__.py").read_text()))]
    assert not silent, f"these folders lack an __init__.py with a docstring: {silent}"


def test_every_module_is_named_in_the_architecture_doc():
    doc = ARCHITECTURE.read_text()
    unnamed = [str(p.relative_to(ENGINE)) for p in sorted(ENGINE.rglob("*.py"))
               if not p.name.startswith("_") and str(p.parent.relative_to(ENGINE)) not in DESCRIBED_AS_A_WHOLE
               and f"{p.name}`" not in doc and f"/{p.name}" not in doc]
    assert not unnamed, f"say in docs/architecture.md which room these belong to: {unnamed}"


def test_no_function_in_the_engine_is_over_sixty_lines():
    found = [entry for path in sorted(ENGINE.rglob("*.py")) for entry in long_functions(path)]
    assert not found, "split these along their jobs:\n" + "\n".join(found)


def test_a_long_function_is_found(tmp_path):
    """The count runs from ``def`` to the last line, docstring and all; a method counts like a function."""
    short = "def short():\n    \"\"\"Doc.\"\"\"\n" + "".join(f"    x{i} = {i}\n" for i in range(58))
    long = "class C:\n    def long(self):\n        \"\"\"Doc.\"\"\"\n" + "".join(f"        y{i} = {i}\n" for i in range(59))
    path = tmp_path / "probe.py"
    path.write_text(short + "\n\n" + long)
    assert long_functions(path, root=tmp_path) == ["probe.py:64 long (61 lines)"]
