"""Every model change has its migration (a clean clone migrates to exactly the models)."""

import io

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_no_model_change_is_without_a_migration():
    out = io.StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)  # exits 1 when one is missing
    assert "No changes detected" in out.getvalue()
