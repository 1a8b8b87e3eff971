#!/usr/bin/env python
"""Django's command-line entry point for CapBench.

`platform/` is deliberately not a Python package (the stdlib has a `platform` module); its apps
and `evaluation` are importable because `pip install -e .` (`make install`) installs them
(pyproject.toml maps each app to its folder under `platform/`).
"""
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capbench.settings.local")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
