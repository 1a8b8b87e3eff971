"""The main pages of the site, filled with what they show, for the browser tests that visit each."""

from __future__ import annotations

from catalog.models import Caption, Item, System
from scoring.services.planning import dataset_plan
from submissions.services import submission_plan
from tests.platform.factories import submit
from tests.platform.scoring.inline import run_jobs

CHARTED = "rouge_l"


def main_pages(dataset, owner) -> dict[str, str]:
    """The main pages, with what they show: the dataset scored with ROUGE-L (the metric page's charts,
    the boards' numbers) and a public submission scored too. Name → path."""
    run_jobs(dataset_plan(dataset=dataset, slugs=[CHARTED]))
    name = "A captioner with a rather long name to see how it wraps"
    submission = submit(owner, dataset, name, caption=lambda item: item.references[0], metrics=[CHARTED])
    run_jobs(submission_plan(submission_id=submission.pk))
    item = Item.objects.filter(dataset=dataset, captions__in=Caption.objects.own()).order_by("pk").distinct().first()
    assert item is not None
    human = System.objects.get(dataset=dataset, kind="human")
    return {
        "home": "/",
        "dataset list": "/datasets/",
        "dataset page": f"/datasets/{dataset.slug}/",
        "item list": f"/datasets/{dataset.slug}/items/",
        "item page": f"/datasets/{dataset.slug}/items/{item.pk}/",
        "metric board": "/metrics/",
        "metric page": f"/metrics/{CHARTED}/",
        "metric index": "/metrics/all/",
        "login": "/accounts/login/",
        "sign-up": "/accounts/signup/",
        "captioner board": f"/datasets/{dataset.slug}/leaderboard/",
        "submission page": f"/submissions/{submission.pk}/",
        "system page": f"/datasets/{dataset.slug}/systems/{submission.system.slug}/",
        "compare page": f"/datasets/{dataset.slug}/compare/?a={submission.system.slug}&b={human.slug}",
        "cite page": "/cite/",
    }
