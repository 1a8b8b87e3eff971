"""Every main page fits a phone: at a 390 × 844 viewport the document is no wider than 390 px (no
sideways scrolling of the page; a wide table scrolls inside its own .scroll box). The metric page is
measured once its charts are drawn. Screenshots are kept in test-artifacts/browser/layout-*.png."""

from __future__ import annotations

import json

import pytest

from catalog.models import Caption, Item, System
from scoring.services.planning import dataset_plan
from submissions.services import MethodInfo, submission_create, submission_plan
from tests.platform.scoring.inline import run_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PHONE = {"width": 390, "height": 844}
CHARTED = "rouge_l"


def main_pages(dataset, owner) -> dict[str, str]:
    """The main pages, with what they show: the dataset scored with ROUGE-L (the metric page's charts,
    the boards' numbers) and a public submission scored too. Name → path."""
    run_jobs(dataset_plan(dataset=dataset, slugs=[CHARTED]))
    items = Item.objects.filter(dataset=dataset).order_by("pk")
    submission = submission_create(
        owner=owner,
        dataset=dataset,
        file_name="captions.json",
        content=json.dumps([{"image_id": item.external_id, "caption": item.references[0]} for item in items]).encode(),
        method=MethodInfo("A captioner with a rather long name to see how it wraps"),
        metrics=[CHARTED],
        is_public=True,
    )
    run_jobs(submission_plan(submission_id=submission.pk))
    item = items.filter(captions__in=Caption.objects.own()).distinct().first()
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


def page_width(page, base: str, path: str) -> int:
    response = page.goto(base + path)
    assert response is not None and response.status == 200, path
    if page.locator(".chart").count():
        page.wait_for_selector(".chart .main-svg", timeout=30_000)  # drawn: a chart could widen the page
    page.wait_for_load_state("networkidle")
    return page.evaluate("document.documentElement.scrollWidth")


def too_wide(page, base: str, pages: dict[str, str], artefacts) -> dict[str, int]:
    page.set_viewport_size(PHONE)
    widths = {}
    for name, path in pages.items():
        widths[name] = page_width(page, base, path)
        page.screenshot(path=str(artefacts / f"layout-{name.replace(' ', '-')}.png"), full_page=True)
    return {name: width for name, width in widths.items() if width > PHONE["width"]}


def test_main_pages_fit_a_phone(live_server, browser_page, demo_dataset, captioner, artefacts):
    pages = main_pages(demo_dataset, captioner)
    assert too_wide(browser_page, live_server.url, pages, artefacts) == {}

    # Signed in: the upload form and the list of one's submissions.
    page = browser_page
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "captioner")
    page.fill("#id_password", "a long test password")
    page.click("main button[type=submit]")
    page.wait_for_url("**/submissions/mine/")
    signed_in = {"upload form": "/submit/", "my submissions": "/submissions/mine/"}
    assert too_wide(page, live_server.url, signed_in, artefacts) == {}

    # The check can fail: a page made wider than the phone is caught.
    page.goto(live_server.url + "/")
    page.evaluate(
        "document.querySelector('main').appendChild(Object.assign(document.createElement('div'), {style: 'width: 600px; height: 1px'}))"
    )
    assert page.evaluate("document.documentElement.scrollWidth") > PHONE["width"]
