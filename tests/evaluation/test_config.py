"""evaluation/capbench_eval/config.py declares each CAPBENCH_* variable the library reads once, read as typed
attributes of `config.env`; the README's library table is generated from it. (The platform's table,
and the check that every name anywhere is declared by one side: tests/platform/capbench/test_config_defaults.py.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from capbench_eval import config

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"CAPBENCH_[A-Z0-9_]*[A-Z0-9]\b")
BEGIN, END = "<!-- config:begin -->", "<!-- config:end -->"
REGENERATE = "python -m capbench_eval.config --markdown (paste it between the config markers of README.md)"
KINDS = (config.STR, config.INT, config.FLOAT, config.BOOL, config.PATH, config.LIST)


def library_code() -> dict[Path, str]:
    return {
        path: path.read_text(encoding="utf-8")
        for path in sorted((ROOT / "evaluation").rglob("*.py"))
        if path != ROOT / "evaluation" / "capbench_eval" / "config.py"
    }


def test_every_name_the_library_names_is_declared_in_it():
    declared = {item.name for item in config.Library.variables()}
    named = {name: str(path.relative_to(ROOT)) for path, text in library_code().items() for name in NAME.findall(text)}
    undeclared = {name: path for name, path in named.items() if name not in declared}
    assert undeclared == {}, "declare these in evaluation/capbench_eval/config.py (Library)"


def test_every_declared_variable_is_read_as_an_attribute():
    code = "\n".join(library_code().values())
    unread = [
        item.name for item in config.Library.variables() if not re.search(rf"\b(env|Library)\.{item.attribute}\b", code)
    ]
    assert unread == [], "no code reads these any more: remove them from evaluation/capbench_eval/config.py"


@pytest.mark.parametrize("item", config.Library.variables(), ids=lambda item: item.name)
def test_each_variable_is_complete(item):
    assert item.name == "CAPBENCH_" + item.attribute.upper()
    assert item.kind in KINDS
    assert item.meaning.strip().endswith(".")
    if item.default is not None:
        assert item.kind.parse(item.name, str(item.default)) == item.default or item.kind is config.LIST


def test_the_readme_table_is_the_generated_one():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert BEGIN in readme, f"README.md has no {BEGIN} … {END} section; run {REGENERATE}"
    assert END in readme, f"README.md has no {BEGIN} … {END} section; run {REGENERATE}"
    table = readme.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"
    assert table == config.Library.markdown(), f"README.md's library table is out of date; run {REGENERATE}"


def test_the_command_prints_the_table():
    done = subprocess.run(
        [sys.executable, "-m", "capbench_eval.config", "--markdown"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert done.stdout == config.Library.markdown()
    assert "| `CAPBENCH_MODEL_DIR` | ~/.cache/capbench/models |" in done.stdout


def test_the_class_holds_the_declaration_and_the_instance_the_value(monkeypatch):
    monkeypatch.setenv("CAPBENCH_T2I_STEPS", "4")
    assert config.Library.t2i_steps.name == "CAPBENCH_T2I_STEPS"
    assert config.Library.t2i_steps.default == 28
    assert config.env.t2i_steps == 4


def test_values_are_parsed_to_their_type_when_read(monkeypatch):
    monkeypatch.delenv("CAPBENCH_T2I_STEPS", raising=False)
    assert config.env.t2i_steps == 28
    monkeypatch.setenv("CAPBENCH_T2I_STEPS", " 4 ")
    assert config.env.t2i_steps == 4
    monkeypatch.setenv("CAPBENCH_T2I_GUIDANCE", "0")
    assert config.env.t2i_guidance == 0.0
    monkeypatch.setenv("CAPBENCH_METRIC_PLUGINS", "a.b, c ,")
    assert config.env.metric_plugins == ["a.b", "c"]
    monkeypatch.setenv("CAPBENCH_MODEL_DIR", "/somewhere")
    assert config.env.model_dir == Path("/somewhere")
    monkeypatch.delenv("CAPBENCH_JUDGE_BASE_URL", raising=False)
    assert config.env.judge_base_url is None  # no default: the reader derives one


def test_empty_or_blank_counts_as_unset(monkeypatch):
    for text in ("", "  "):
        monkeypatch.setenv("CAPBENCH_T2I_STEPS", text)
        assert config.env.t2i_steps == 28
        assert config.Library.t2i_steps.raw() is None


def test_a_wrong_value_names_the_variable_and_what_it_expects(monkeypatch):
    monkeypatch.setenv("CAPBENCH_T2I_STEPS", "many")
    with pytest.raises(config.ConfigError, match=r"CAPBENCH_T2I_STEPS='many' is not valid: expected an integer"):
        _ = config.env.t2i_steps
    monkeypatch.setenv("CAPBENCH_HICE_PROPOSER_CONF", "high")
    with pytest.raises(ValueError, match=r"CAPBENCH_HICE_PROPOSER_CONF='high' is not valid: expected a number"):
        _ = config.env.hice_proposer_conf


class Sample(config.Table):
    sample_flag = config.declare(config.BOOL, True, "A flag.")


def test_a_flag_takes_the_usual_spellings_and_refuses_others(monkeypatch):
    sample = Sample()
    assert sample.sample_flag is True
    for text, value in (("off", False), ("No", False), ("1", True), (" yes ", True)):
        monkeypatch.setenv("CAPBENCH_SAMPLE_FLAG", text)
        assert sample.sample_flag is value
    monkeypatch.setenv("CAPBENCH_SAMPLE_FLAG", "maybe")
    with pytest.raises(config.ConfigError, match="CAPBENCH_SAMPLE_FLAG='maybe' is not valid: expected one of 1/0"):
        _ = sample.sample_flag
