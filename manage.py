#!/usr/bin/env python
"""Django's command-line entry point for CapBench.

`platform/` is deliberately not a Python package (the stdlib has a `platform` module), so its
apps are made importable by putting the folder itself on sys.path.
"""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "platform"))
sys.path.insert(1, str(ROOT))


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capbench.settings.local")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
