"""What a newcomer sees, looked at in a real browser at a desk (1366 × 900) and on a phone (390 × 844):
no main page is wider than the window (a wide table scrolls inside its own focusable box), an item
page of a dataset with pictures shows its picture, and no page shows a raw protocol key, metric slug
or configuration hash outside a "technical details" toggle. The metric page is measured once its
charts are drawn. Screenshots: test-artifacts/browser/layout-<width>-<page>.png."""

from __future__ import annotations

import re

import pytest

from campaigns.models import Campaign
from campaigns.services.creation import CampaignSpec, campaign_create, campaign_status_set, campaign_systems_allowed
from tests.platform.browser.pages import main_pages

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PHONE = {"width": 390, "height": 844}
DESK = {"width": 1366, "height": 900}
# What a reader should never meet outside <details>: a protocol key (flickr8k-expert/canonical@1), a
# configuration hash (12 hex digits, one a letter), a metric's slug.
RAW_WORDING = re.compile(
    r"\b[a-z0-9-]+/(paper|canonical|live)@\d+\b|\b(?=[0-9a-f]*[a-f])[0-9a-f]{12}\b|\b(bleu_[1-4]|rouge_l|cider_d)\b"
)
VISIBLE_TEXT = """() => {
  const copy = document.body.cloneNode(true);
  copy.querySelectorAll('details, script, style, code, pre, .sr-only').forEach((node) => node.remove());
  return copy.innerText;
}"""
PICTURE_SHOWN = """() => [...document.querySelectorAll('main img')].some((img) => {
  const box = img.getBoundingClientRect();
  return img.complete && img.naturalWidth > 0 && box.width > 0 && box.height > 0;
})"""


def page_width(page, base: str, path: str) -> int:
    response = page.goto(base + path)
    assert response is not None and response.status == 200, path
    if page.locator(".chart").count():
        page.wait_for_selector(".chart .main-svg", timeout=30_000)  # drawn: a chart could widen the page
    page.wait_for_load_state("networkidle")
    return page.evaluate("document.documentElement.scrollWidth")


def too_wide(page, base: str, pages: dict[str, str], artefacts, viewport: dict = PHONE) -> dict[str, int]:
    """Each page's width where it is wider than the window; every page screenshotted, and none may
    show raw keys outside a details toggle."""
    page.set_viewport_size(viewport)
    widths = {}
    for name, path in pages.items():
        widths[name] = page_width(page, base, path)
        page.screenshot(
            path=str(artefacts / f"layout-{viewport['width']}-{name.replace(' ', '-')}.png"), full_page=True
        )
        raw = RAW_WORDING.search(page.evaluate(VISIBLE_TEXT))
        assert raw is None, f"{name} ({path}) shows {raw.group(0)!r} outside a details toggle"
    return {name: width for name, width in widths.items() if width > viewport["width"]}


def test_main_pages_fit_a_desk_and_a_phone_and_show_their_pictures(
    live_server, browser_page, demo_pictures, captioner, artefacts, django_user_model
):
    pages = main_pages(demo_pictures, captioner)
    campaign = _open_campaign(demo_pictures, django_user_model)
    for viewport in (DESK, PHONE):
        assert too_wide(browser_page, live_server.url, pages, artefacts, viewport) == {}
        browser_page.goto(live_server.url + pages["item page"])
        assert browser_page.evaluate(PICTURE_SHOWN), f"the item page shows no picture at {viewport['width']} px"

    # Signed in: the upload form and the list of one's submissions.
    page = browser_page
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "captioner")
    page.fill("#id_password", "a long test password")
    page.click("main button[type=submit]")
    page.wait_for_url("**/submissions/mine/")
    signed_in = {
        "upload form": "/submit/",
        "my submissions": "/submissions/mine/",
        "annotation page": f"/campaigns/{campaign.slug}/annotate/",
    }
    for viewport in (DESK, PHONE):
        assert too_wide(page, live_server.url, signed_in, artefacts, viewport) == {}
        page.goto(live_server.url + signed_in["annotation page"])
        assert page.evaluate(PICTURE_SHOWN), f"the annotation page shows no picture at {viewport['width']} px"

    # The check can fail: a page made wider than the phone is caught.
    page.goto(live_server.url + "/")
    page.evaluate(
        "document.querySelector('main').appendChild(Object.assign(document.createElement('div'), {style: 'width: 600px; height: 1px'}))"
    )
    assert page.evaluate("document.documentElement.scrollWidth") > PHONE["width"]


def _open_campaign(dataset, django_user_model):
    """A rating campaign on the demo's systems, open to every signed-in user."""
    staff = django_user_model.objects.create_user("organiser", password="an organiser's password", is_staff=True)
    spec = CampaignSpec(
        slug="first-look", title="First look", dataset=dataset, systems=campaign_systems_allowed(dataset)
    )
    campaign = campaign_create(spec=spec, created_by=staff)
    return campaign_status_set(campaign=campaign, status=Campaign.Status.OPEN)
