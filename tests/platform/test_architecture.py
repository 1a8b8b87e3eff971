"""The apps depend one way (catalog ← scoring ← submissions ← leaderboards ← api; capbench_eval below
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


def test_both_kinds_of_submission_are_owned_uploads_with_the_withdrawn_status_the_rule_names():
    """catalog.visibility reads an OwnedUpload's fields: both kinds inherit them, and say "withdrawn"
    as the rule does."""
    from catalog import visibility
    from catalog.uploads.models import OwnedUpload
    from submissions.models import Submission
    from workbench.models import MetricSubmission

    for kind in (Submission, MetricSubmission):
        assert issubclass(kind, OwnedUpload)
        assert kind.Status.WITHDRAWN == visibility.WITHDRAWN
        assert {"owner", "is_public", "status"} <= {field.name for field in kind._meta.get_fields()}
