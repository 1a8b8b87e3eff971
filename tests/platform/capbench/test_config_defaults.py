"""The platform's settings read every CAPBENCH_* variable through evaluation/config.py (its one
declaration gives the type and the default the README's table shows): no settings module reads one
on its own, values set in the environment arrive parsed, and a malformed one stops the settings
with its name."""

import ast
import os
import subprocess
import sys

import pytest

from evaluation import config

SETTINGS = ["base.py", "environment.py", "local.py", "production.py", "test.py"]


def own_reads(path):
    """CAPBENCH_* names read without evaluation.config: env_*("CAPBENCH_…"), os.environ.get / getenv,
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
        if path.name != "config.py" or path.parent.name != "evaluation"
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
    assert values["CAPBENCH_BATCH_ATTEMPTS"] == config.default("CAPBENCH_BATCH_ATTEMPTS")
    assert values["CAPBENCH_RATE_LIMITS_ENABLED"] is config.default("CAPBENCH_RATE_LIMITS_ENABLED")
    assert values["CAPBENCH_RATES"]["signup"] == config.default("CAPBENCH_SIGNUP_RATE")
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
    assert values["CAPBENCH_BATCH_ATTEMPTS"] == 7 and values["CAPBENCH_RATE_LIMITS_ENABLED"] is False
    assert values["CAPBENCH_TRUSTED_PROXIES"] == ["10.0.0.1", "10.0.0.2"]


def test_a_malformed_value_stops_the_settings_naming_the_variable(repo_root):
    broken = settings_values(repo_root, {"CAPBENCH_BATCH_SIZE_GPU": "many"}, ["CAPBENCH_BATCH_SIZES"])
    assert broken.returncode != 0
    assert "CAPBENCH_BATCH_SIZE_GPU='many' is not valid: expected an integer" in broken.stderr
