"""The apps depend one way (catalog ← scoring ← submissions ← leaderboards ← api; evaluation below
them all, free of Django) and no app has an import cycle: the contracts in .importlinter, checked by
import-linter (a dev dependency) so that a new cycle fails `make test`."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def test_import_contracts_are_kept(repo_root):
    assert importlib.util.find_spec("importlinter") is not None, (
        "import-linter is missing: it is in the dev extras (pip install -e '.[dev]')"
    )
    result = subprocess.run(
        [sys.executable, "-c", LINT, "--config", str(repo_root / ".importlinter"), "--no-cache"],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"an import contract is broken:\n{result.stdout}\n{result.stderr}"


def test_catalog_names_the_withdrawn_status_as_submissions_does():
    """catalog.visibility writes "withdrawn" itself (catalog sits below submissions): the two agree."""
    from catalog import visibility
    from submissions.models import Submission

    assert visibility.WITHDRAWN == Submission.Status.WITHDRAWN
