"""evaluation/config.py declares every CAPBENCH_* variable once; the README's table is generated from it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation import config

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("platform", "evaluation", "docker", "bench", "Makefile")
PATTERNS = ("*.py", "*.yaml", "*.yml", "*.sh", "*.toml", "Makefile", "Dockerfile*")
NAME = re.compile(r"CAPBENCH_[A-Z0-9_]*")
BEGIN, END = "<!-- config:begin -->", "<!-- config:end -->"
REGENERATE = "python -m evaluation.config --markdown (paste it between the config markers of README.md)"


def scanned_files() -> list[Path]:
    files = []
    for entry in SCANNED:
        path = ROOT / entry
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files.extend(p for pattern in PATTERNS for p in path.rglob(pattern) if p.is_file())
    return sorted(set(files))


def names_in_code() -> dict[str, set[str]]:
    """Each CAPBENCH_* name outside evaluation/config.py and the files it appears in."""
    found: dict[str, set[str]] = {}
    for path in scanned_files():
        if path == ROOT / "evaluation" / "config.py":
            continue
        for name in NAME.findall(path.read_text(encoding="utf-8", errors="replace")):
            found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_name_in_the_code_is_declared():
    declared = set(config.VARIABLES) | set(config.SETTINGS_ONLY)
    undeclared = {}
    for name, where in names_in_code().items():
        if name.endswith("_"):  # prose such as `CAPBENCH_T2I_*` names a family of declared variables
            if not any(known.startswith(name) for known in declared):
                undeclared[name] = sorted(where)
        elif name not in declared:
            undeclared[name] = sorted(where)
    assert not undeclared, f"declare these in evaluation/config.py (VARIABLES): {undeclared}"


def test_every_declared_name_is_still_used():
    used = names_in_code()
    unused = [name for name in [*config.VARIABLES, *config.SETTINGS_ONLY] if name not in used]
    assert not unused, f"no code reads these any more: remove them from evaluation/config.py: {unused}"


def test_each_variable_is_complete():
    for name, item in config.VARIABLES.items():
        assert (
            item.name == name and item.type in config.PARSERS and item.read_by in {config.EVALUATION, config.PLATFORM}
        )
        assert item.meaning.strip() and item.meaning.endswith("."), name
        if item.default is not None:
            assert item.parse(str(item.default)) == item.default or item.type == "list", name


def test_the_readme_table_is_the_generated_one():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert BEGIN in readme and END in readme, f"README.md has no {BEGIN} … {END} section; run {REGENERATE}"
    table = readme.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"
    assert table == config.markdown(), f"README.md's configuration table is out of date; run {REGENERATE}"


def test_the_command_prints_the_table():
    done = subprocess.run(
        [sys.executable, "-m", "evaluation.config", "--markdown"], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stdout == config.markdown()
    assert "| `CAPBENCH_MODEL_DIR` |" in done.stdout


def test_values_are_parsed_to_their_type_at_call_time(monkeypatch):
    monkeypatch.delenv("CAPBENCH_T2I_STEPS", raising=False)
    assert config.get("CAPBENCH_T2I_STEPS") == 28
    monkeypatch.setenv("CAPBENCH_T2I_STEPS", " 4 ")
    assert config.get("CAPBENCH_T2I_STEPS") == 4
    monkeypatch.setenv("CAPBENCH_T2I_GUIDANCE", "0")
    assert config.get("CAPBENCH_T2I_GUIDANCE") == 0.0
    monkeypatch.setenv("CAPBENCH_METRIC_PLUGINS", "a.b, c ,")
    assert config.get("CAPBENCH_METRIC_PLUGINS") == ["a.b", "c"]
    monkeypatch.setenv("CAPBENCH_MODEL_DIR", "/somewhere")
    assert config.get("CAPBENCH_MODEL_DIR") == Path("/somewhere")
    monkeypatch.setenv("CAPBENCH_DB_POOL", "off")
    assert config.get("CAPBENCH_DB_POOL") is False
    monkeypatch.setenv("CAPBENCH_T2I_STEPS", "")  # empty is unset
    assert config.get("CAPBENCH_T2I_STEPS") == 28 and config.raw("CAPBENCH_T2I_STEPS") is None


def test_a_wrong_value_names_the_variable_and_what_it_expects(monkeypatch):
    monkeypatch.setenv("CAPBENCH_T2I_STEPS", "many")
    with pytest.raises(config.ConfigError, match=r"CAPBENCH_T2I_STEPS='many' is not valid: expected an integer"):
        config.get("CAPBENCH_T2I_STEPS")
    monkeypatch.setenv("CAPBENCH_HICE_PROPOSER_CONF", "high")
    with pytest.raises(ValueError, match=r"CAPBENCH_HICE_PROPOSER_CONF='high' is not valid: expected a number"):
        config.get("CAPBENCH_HICE_PROPOSER_CONF")
    monkeypatch.setenv("CAPBENCH_RATE_LIMITS_ENABLED", "maybe")
    with pytest.raises(config.ConfigError, match="expected one of 1/0, true/false"):
        config.get("CAPBENCH_RATE_LIMITS_ENABLED")


def test_an_undeclared_name_is_refused():
    with pytest.raises(KeyError, match="CAPBENCH_NOPE is not declared in evaluation/config.py"):
        config.get("CAPBENCH_NOPE")
