"""`manage.py scoring metrics --summary`, what `make run` runs first behind the serving site: the
registry stored (so the metric pages and the API list every metric from the start) and one line
saying how many there are and which cannot run on this machine (on a new database nothing is to
be re-scored, the only other line it may print)."""

import io

import pytest
from django.core.management import call_command

from capbench_eval import metrics as registry
from scoring.models import Metric

pytestmark = pytest.mark.django_db


def test_the_summary_stores_the_registry_and_names_what_cannot_run_here():
    assert not Metric.objects.exists()
    out = io.StringIO()
    call_command("scoring", "metrics", "--summary", stdout=out)
    line = out.getvalue().strip()
    assert "\n" not in line
    stored = Metric.objects.filter(is_registered=True)
    assert sorted(stored.values_list("slug", flat=True)) == sorted(registry.slugs())
    unavailable = sorted(stored.filter(available=False).values_list("slug", flat=True))
    can_run = len(registry.slugs()) - len(unavailable)
    assert line.startswith(f"metrics: {len(registry.slugs())} registered, {can_run} can run here")
    if unavailable:  # (here: every metric whose weights are not in the model store)
        assert line.endswith(f"(not: {', '.join(unavailable)}; `python manage.py scoring metrics` says why)")
    else:
        assert line.endswith("can run here")
