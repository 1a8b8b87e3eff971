"""House rules that keep the code small and plain (issue 40, docs/architecture.md): no platform module
over 500 lines (migrations aside), complexity checked by ruff with no exception in platform/ or
evaluation/ (`make lint` runs it), and no Python file that edits the import path."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 500
MAX_COMPLEXITY = 10
# An edit of the import path: a call that changes the list, or an assignment to it or a slice of it.
PATH_EDIT = re.compile(
    r"\bsys\s*\.\s*path\s*(\.\s*(insert|append|extend|remove|pop|clear)\s*\(|(\[[^\]]*\])?\s*\+?=(?!=))"
)
SKIPPED = {"node_modules", "build", "dist", "__pycache__"}  # and every folder whose name starts with a dot


def python_files(folder: Path):
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or entry.name in SKIPPED:
            continue
        if entry.is_dir():
            yield from python_files(entry)
        elif entry.suffix == ".py":
            yield entry


def test_no_platform_module_is_over_500_lines():
    """A module past the limit is split into cohesive modules (a package keeps the names callers use)."""
    long = [
        f"{path.relative_to(ROOT)}: {lines} lines"
        for path in python_files(ROOT / "platform")
        if "migrations" not in path.relative_to(ROOT).parts
        and (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert long == [], f"platform modules over {MAX_MODULE_LINES} lines (split them):\n" + "\n".join(long)


def test_ruff_checks_complexity_with_no_exception_in_the_product():
    """`make lint` runs ruff on platform/ and evaluation/ with McCabe's C901 at 10; only tests, bench/
    or client/ files may be excused from it."""
    lint = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["lint"]
    assert any("C901".startswith(code) for code in lint["select"]), lint["select"]
    assert lint["mccabe"]["max-complexity"] == MAX_COMPLEXITY
    excused = [
        pattern
        for pattern, codes in lint.get("per-file-ignores", {}).items()
        if any("C901".startswith(code) for code in codes) and not pattern.startswith(("tests/", "bench/", "client/"))
    ]
    assert excused == [], f"complexity excused outside tests, bench and client: {excused}"
    assert not any("C901".startswith(code) for code in lint.get("ignore", [])), lint["ignore"]


def test_no_python_file_edits_the_import_path():
    """The apps, capbench_eval and the client are installed (pip install -e .); bench scripts run as
    `python -m bench.<name>` from the repository root reach tests/judgment_data.py that way; a child
    interpreter is given PYTHONPATH. So no file adds to or rewrites the module search path."""
    edits = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in python_files(ROOT)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if PATH_EDIT.search(line)
    ]
    assert edits == [], "import path edits:\n" + "\n".join(edits)


def test_the_path_edit_pattern_finds_each_form():
    """The pattern above is not vacuous: each way of editing the path is caught, reading it is not."""
    path = "sys" + ".path"  # written apart, so that this file holds no edit for the test above to find
    caught = [f"{path}.insert(0, root)", f"{path}.append(x)", f"{path}[:0] = [x]", f"{path} = [x]", f"{path} += [x]"]
    assert [line for line in caught if not PATH_EDIT.search(line)] == []
    assert not PATH_EDIT.search(f"if {path} == before:")
    assert not PATH_EDIT.search(f"# the script's folder is first on {path}")
