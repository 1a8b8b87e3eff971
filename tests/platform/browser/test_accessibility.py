"""axe-core (bundled by axe-playwright-python) run in each main page in a real browser: a violation
of impact "serious" or "critical" fails the test, printed with its rule, impact and the nodes it
found (CSS selectors). The metric page is checked once its charts are drawn."""

from __future__ import annotations

import pytest

from tests.platform.browser.pages import main_pages

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

BLOCKING = {"serious", "critical"}


def violations(page, base: str, path: str) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    response = page.goto(base + path)
    assert response is not None and response.status == 200, path
    if page.locator(".chart").count():
        page.wait_for_selector(".chart .main-svg", timeout=30_000)
    page.wait_for_load_state("networkidle")
    found = Axe().run(page).response["violations"]
    return [
        f"{path}: {violation['id']} ({violation['impact']}): "
        + "; ".join(" ".join(node["target"]) for node in violation["nodes"])
        for violation in found
        if violation["impact"] in BLOCKING
    ]


def check(page, base: str, pages: dict[str, str]) -> list[str]:
    found = [line for path in pages.values() for line in violations(page, base, path)]
    print("\n".join(found))
    return found


def sign_in(page, base: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", "captioner")
    page.fill("#id_password", "a long test password")
    page.click("main button[type=submit]")
    page.wait_for_url("**/submissions/mine/")


def test_main_pages_pass_axe(live_server, browser_page, demo_dataset, captioner):
    page, base = browser_page, live_server.url
    pages = main_pages(demo_dataset, captioner)
    assert check(page, base, pages) == []

    sign_in(page, base)
    assert check(page, base, {"upload form": "/submit/", "my submissions": "/submissions/mine/"}) == []
    # The upload form's file input has a visible label and offers the formats the platform reads.
    page.goto(f"{base}/submit/")
    file_input = page.locator("#id_results")
    assert file_input.get_attribute("accept") == ".json,.jsonl,.csv,.ndjson"
    assert page.locator("label[for=id_results]").is_visible()
    assert page.locator("label[for=id_results]").inner_text() == "Results file"

    # The check can fail: an image without a text alternative is a critical violation.
    page.evaluate("document.querySelector('main').appendChild(document.createElement('img'))")
    found = axe_violations_now(page)
    assert "image-alt" in found


def axe_violations_now(page) -> set[str]:
    from axe_playwright_python.sync_playwright import Axe

    return {v["id"] for v in Axe().run(page).response["violations"] if v["impact"] in BLOCKING}
