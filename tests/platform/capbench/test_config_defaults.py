"""The platform's settings read their CAPBENCH_* variables with their own helpers (env_int, env_bool,
env_str); the defaults they give must be the ones evaluation/config.py declares and the README's table
shows, so a default changed in one place and not the other fails here."""

import ast

import pytest

from evaluation import config

SETTINGS = [
    "platform/capbench/settings/base.py",
    "platform/capbench/settings/environment.py",
    "platform/capbench/settings/production.py",
]


def literal_defaults(path):
    """(name, default) of every env_*("CAPBENCH_…", default) call whose default is a constant
    expression (defaults derived from other settings are skipped: the table shows them in words)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith("env_")):
            continue
        name, default = node.args
        if not (isinstance(name, ast.Constant) and str(name.value).startswith("CAPBENCH_")):
            continue
        try:
            value = eval(compile(ast.Expression(default), str(path), "eval"), {"__builtins__": {}}, {})
        except NameError:
            continue
        yield name.value, value


@pytest.mark.parametrize("relative", SETTINGS)
def test_settings_defaults_are_the_declared_ones(repo_root, relative):
    found = list(literal_defaults(repo_root / relative))
    if relative.endswith("base.py"):
        assert len(found) > 20  # the scan sees the settings' reads
    for name, value in found:
        declared = config.VARIABLES[name]
        expected = declared.default
        if isinstance(value, str) and declared.type != "str":
            value = declared.parse(value) if value else declared.default
        assert value == expected, f"{name}: the settings default {value!r}, evaluation/config.py {expected!r}"
