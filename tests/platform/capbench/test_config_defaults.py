"""The platform's settings read every CAPBENCH_* variable through its declaration in
platform/capbench/settings/variables.py (which gives the type and the default the README's platform
table shows): no settings module reads one on its own, values set in the environment arrive parsed,
and a malformed one stops the settings with its name. Every CAPBENCH_* name in the code is declared
by one side, the library (evaluation/capbench_eval/config.py) or the platform, never both."""

import ast
import os
import re
import subprocess
import sys

import pytest

from capbench.settings.variables import SETTINGS_ONLY, Platform
from capbench_eval import config

SCANNED = ("platform", "evaluation", "docker", "bench", "Makefile")
PATTERNS = ("*.py", "*.yaml", "*.yml", "*.sh", "*.toml", "Makefile", "Dockerfile*")
NAME = re.compile(r"CAPBENCH_[A-Z0-9_]*")
DECLARATIONS = ("evaluation/capbench_eval/config.py", "platform/capbench/settings/variables.py")
BEGIN, END = "<!-- platform-config:begin -->", "<!-- platform-config:end -->"
REGENERATE = "python -m capbench.settings.variables --markdown (paste it between the platform-config markers)"
KINDS = (config.STR, config.INT, config.FLOAT, config.BOOL, config.PATH, config.LIST)

SETTINGS = ["base.py", "environment.py", "local.py", "production.py", "test.py"]


def own_reads(path):
    """CAPBENCH_* names read without capbench_eval.config: env_*("CAPBENCH_…"), os.environ.get / getenv,
    or os.environ[...] read (setting one for a child process is not reading it)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = str(node.args[0].value)
            func = ast.unparse(node.func)
            reads = func.startswith("env_") or func.endswith(("environ.get", "getenv"))
            if name.startswith("CAPBENCH_") and reads:
                yield name
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and "environ" in ast.unparse(node.value):
            key = node.slice
            if isinstance(key, ast.Constant) and str(key.value).startswith("CAPBENCH_"):
                yield str(key.value)


@pytest.mark.parametrize("name", SETTINGS)
def test_settings_read_capbench_variables_only_through_the_declarations(repo_root, name):
    assert list(own_reads(repo_root / "platform" / "capbench" / "settings" / name)) == []


def test_no_module_reads_a_capbench_variable_past_the_declarations(repo_root):
    """Everywhere else too: the apps, the library (but its config module), the benchmarks, manage.py."""
    files = [*repo_root.glob("platform/**/*.py"), *repo_root.glob("evaluation/**/*.py"), *repo_root.glob("bench/*.py")]
    files.append(repo_root / "manage.py")
    found = {
        str(path.relative_to(repo_root)): names
        for path in files
        if path.name != "config.py" or path.parent.name != "capbench_eval"
        if (names := sorted(set(own_reads(path))))
    }
    assert found == {}


def settings_values(repo_root, extra: dict[str, str], names: list[str]) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPBENCH_")}
    env.update(extra, DJANGO_SETTINGS_MODULE="capbench.settings.base")
    code = f"import json, django.conf as c; print(json.dumps({{n: getattr(c.settings, n) for n in {names!r}}}, default=str))"
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=repo_root, capture_output=True, text=True)


def test_unset_variables_take_the_declared_defaults_and_set_ones_arrive_parsed(repo_root):
    import json

    names = ["CAPBENCH_BATCH_ATTEMPTS", "CAPBENCH_RATE_LIMITS_ENABLED", "CAPBENCH_TRUSTED_PROXIES", "CAPBENCH_RATES"]
    unset = settings_values(repo_root, {}, names)
    assert unset.returncode == 0, unset.stderr
    values = json.loads(unset.stdout)
    assert values["CAPBENCH_BATCH_ATTEMPTS"] == Platform.batch_attempts.default
    assert values["CAPBENCH_RATE_LIMITS_ENABLED"] is Platform.rate_limits_enabled.default
    assert values["CAPBENCH_RATES"]["signup"] == Platform.signup_rate.default
    assert values["CAPBENCH_TRUSTED_PROXIES"] == []
    set_ = settings_values(
        repo_root,
        {
            "CAPBENCH_BATCH_ATTEMPTS": "7",
            "CAPBENCH_RATE_LIMITS_ENABLED": "off",
            "CAPBENCH_TRUSTED_PROXIES": "10.0.0.1, 10.0.0.2",
        },
        names,
    )
    values = json.loads(set_.stdout)
    assert values["CAPBENCH_BATCH_ATTEMPTS"] == 7
    assert values["CAPBENCH_RATE_LIMITS_ENABLED"] is False
    assert values["CAPBENCH_TRUSTED_PROXIES"] == ["10.0.0.1", "10.0.0.2"]


def test_a_malformed_value_stops_the_settings_naming_the_variable(repo_root):
    broken = settings_values(repo_root, {"CAPBENCH_BATCH_SIZE_GPU": "many"}, ["CAPBENCH_BATCH_SIZES"])
    assert broken.returncode != 0
    assert "CAPBENCH_BATCH_SIZE_GPU='many' is not valid: expected an integer" in broken.stderr


def scanned_files(repo_root) -> list:
    files = []
    for entry in SCANNED:
        path = repo_root / entry
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files.extend(p for pattern in PATTERNS for p in path.rglob(pattern) if p.is_file())
    return sorted(set(files))


def code_outside_declarations(repo_root) -> dict:
    """Each scanned file's text but the two declaration modules'."""
    return {
        str(path.relative_to(repo_root)): path.read_text(encoding="utf-8", errors="replace")
        for path in scanned_files(repo_root)
        if str(path.relative_to(repo_root)) not in DECLARATIONS
    }


def test_every_name_in_the_code_is_declared_by_one_side(repo_root):
    declared = {item.name for item in [*config.Library.variables(), *Platform.variables()]} | set(SETTINGS_ONLY)
    undeclared: dict[str, set[str]] = {}
    for path, text in code_outside_declarations(repo_root).items():
        for name in NAME.findall(text):
            family = name.endswith("_")  # prose such as `CAPBENCH_T2I_*` names a family of declared variables
            if not (any(known.startswith(name) for known in declared) if family else name in declared):
                undeclared.setdefault(name, set()).add(path)
    assert undeclared == {}, (
        "declare these in evaluation/capbench_eval/config.py or platform/capbench/settings/variables.py"
    )


def test_no_variable_is_declared_by_both_sides():
    library = {item.name for item in config.Library.variables()}
    assert library & {item.name for item in Platform.variables()} == set()


def test_every_platform_variable_is_still_read(repo_root):
    code = "\n".join(code_outside_declarations(repo_root).values())
    unread = [item.name for item in Platform.variables() if not re.search(rf"(env|Platform)\.{item.attribute}\b", code)]
    unread += [name for name in SETTINGS_ONLY if name not in code]
    assert unread == [], "no code reads these any more: remove them from platform/capbench/settings/variables.py"


@pytest.mark.parametrize("item", Platform.variables(), ids=lambda item: item.name)
def test_each_platform_variable_is_complete(item):
    assert item.name == "CAPBENCH_" + item.attribute.upper()
    assert item.kind in KINDS
    assert item.meaning.strip().endswith(".")
    if item.default is not None:
        assert item.kind.parse(item.name, str(item.default)) == item.default or item.kind is config.LIST


def test_the_readme_platform_table_is_the_generated_one(repo_root):
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    assert BEGIN in readme, f"README.md has no {BEGIN} … {END} section; run {REGENERATE}"
    assert END in readme, f"README.md has no {BEGIN} … {END} section; run {REGENERATE}"
    table = readme.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"
    assert table == Platform.markdown(), f"README.md's platform table is out of date; run {REGENERATE}"


def test_the_command_prints_the_platform_table(repo_root):
    command = [sys.executable, "-m", "capbench.settings.variables", "--markdown"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=repo_root, check=True)
    assert done.stdout == Platform.markdown()
    assert "| `CAPBENCH_DB_POOL_SIZE` | `8` (int) |" in done.stdout
