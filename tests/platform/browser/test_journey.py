"""A new user's whole journey in a real browser (Playwright driving Debian's Chromium) against a
live server and a real worker: sign up, upload, watch the scoring finish, read the results card
(ranks, intervals, the gap to the baseline), compare with the baseline and open the image where the
two differ most, find the system first on the board (desktop and phone), reverse a column, open a
metric's charts, and fetch the same number through the API.

Screenshots are kept in test-artifacts/browser/ (or $CAPBENCH_TEST_ARTIFACTS). The browser and its
Content-Security-Policy watch are in conftest.py: a violation on any page fails the journey."""

from __future__ import annotations

import json
import re

import pytest
from django.core import mail

from catalog.models import Item, System
from scoring.services.planning import dataset_plan
from submissions.models import Submission
from tests.platform.scoring.workers import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_a_new_user_submits_and_finds_the_system_on_the_board(
    live_server, workers, browser_page, demo_dataset, tmp_path, artefacts
):
    page, base = browser_page, live_server.url
    workers.start("browser", CAPBENCH_METRIC_PLUGINS=None)  # the real metrics only
    # The dataset's human captions are the baseline the results card and the comparison measure against.
    System.objects.filter(dataset=demo_dataset, kind="human").update(is_baseline=True)
    # The metric board needs the dataset scored too; CIDEr-D gives the baseline its headline number.
    dataset_plan(dataset=demo_dataset, slugs=["rouge_l", "cider_d"])
    results = tmp_path / "my-captions.json"
    results.write_text(
        json.dumps(
            [
                {"image_id": item.external_id, "caption": item.references[0]}
                for item in Item.objects.filter(dataset=demo_dataset)
            ]
        )
    )

    page.goto(f"{base}/accounts/signup/")
    page.fill("#id_username", "ada")
    page.fill("#id_email", "ada@example.org")
    page.fill("#id_password1", "correct horse battery staple 9")
    page.fill("#id_password2", "correct horse battery staple 9")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/accounts/signup/sent/")
    # The confirmation link from the mail (the live server shares this process's mail outbox).
    link = re.search(r"/accounts/signup/confirm/\S+/\S+/", mail.outbox[-1].body).group(0)
    page.goto(f"{base}{link}")
    page.click("main button[type=submit]")
    page.wait_for_url(f"{base}/accounts/login/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "correct horse battery staple 9")
    page.click("main button[type=submit]")
    page.wait_for_url(f"{base}/submissions/mine/")

    page.goto(f"{base}/submit/")
    page.select_option("#id_dataset", "demo")
    page.set_input_files("#id_results", str(results))
    assert page.inner_text("#chosen-file") == "Chosen: my-captions.json"
    page.fill("#id_method_name", "Ada's <b>captioner</b>")
    page.fill("#id_paper_url", "https://example.org/ada")
    assert not page.is_checked("#id_is_public")  # private unless asked
    page.check("#id_is_public")
    page.screenshot(path=str(artefacts / "1-upload.png"), full_page=True)
    page.click("#upload-form button[type=submit]")
    page.wait_for_url(f"{base}/submissions/*/")
    submission = Submission.objects.get()
    page.wait_for_function(
        "() => document.getElementById('submission-status').textContent !== 'Queued'", timeout=60_000
    )
    page.screenshot(path=str(artefacts / "2-progress.png"), full_page=True)
    wait_until(lambda: Submission.objects.get().status == "done", 240, workers, "scoring the submission")
    page.wait_for_function(
        "() => document.getElementById('submission-status').textContent === 'finished'", timeout=30_000
    )
    page.wait_for_selector("#scores tbody tr td.num")
    # The results card: every metric ×100 with its interval, its rank among the public systems and
    # the gap to the baseline; what has no number said in plain words (the server's detail is staff's).
    cider_row = page.locator("#results tr[data-metric=cider_d]").inner_text()
    assert re.search(r"\d+\.\d–\d+\.\d", cider_row), cider_row  # its 95% interval
    assert "1 of 2" in cider_row and "vs Retrieved human captions" in cider_row, cider_row
    assert re.search(r"Not computed on this server: [^\n]*SPICE[^\n]*\(", page.inner_text("#results-unavailable"))
    assert "CoreNLP" not in page.content()
    page.screenshot(path=str(artefacts / "3-results-card.png"), full_page=True)

    # Compared with the baseline: paired differences, then the images where the two differ most.
    page.click("#compare-link")
    page.wait_for_selector("#paired-differences")
    paired = page.locator("#paired-differences tr[data-metric=cider_d]").inner_text()
    assert " to " in paired and "A better" in paired, paired
    explored = page.locator("article.explored").first
    assert "CIDEr-D" in explored.inner_text()
    assert explored.locator("tr.chosen").count() == 1
    page.screenshot(path=str(artefacts / "4-compare.png"), full_page=True)
    explored.locator("h3 a").click()
    page.wait_for_url(f"{base}/datasets/demo/items/*/")
    page.screenshot(path=str(artefacts / "5-item.png"), full_page=True)

    # The board's first view: ranked by the headline metric (CIDEr-D), numbers first.
    page.goto(f"{base}/datasets/demo/leaderboard/")
    page.wait_for_selector("#captioner-board")
    assert page.inner_text("#sorted-by") == "CIDEr-D"
    first = page.locator("#captioner-board tbody tr").first
    assert "Ada's <b>captioner</b>" in first.inner_text()  # shown as text, never as markup
    assert first.locator("td.board-rank").inner_text().strip() == "1"
    shown_cider = float(first.locator("td[data-metric=cider_d]").inner_text().split()[0])
    header = page.locator("#captioner-board th:has(a[data-metric=cider_d])")
    assert header.get_attribute("aria-sort") == "descending"
    page.screenshot(path=str(artefacts / "6-board-desktop.png"))
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # the table scrolls in its own box
    page.screenshot(path=str(artefacts / "7-board-phone.png"))
    page.set_viewport_size({"width": 1280, "height": 900})
    page.click("#captioner-board th a[data-metric=cider_d]")  # again: worst first, ranks still from the best
    page.wait_for_url("**order=asc**")
    assert page.locator("#captioner-board tbody tr").first.locator("td.board-rank").inner_text().strip() == "2"

    wait_until(
        lambda: page.request.get(f"{base}/api/v1/correlations/?dataset=demo&metric=rouge_l").json()["count"],
        120,
        workers,
        "the dataset's ROUGE-L correlations",
    )
    page.goto(f"{base}/metrics/")
    assert "#1" in page.inner_text("#metric-board")  # the significance cluster of the only metric
    page.screenshot(path=str(artefacts / "8-metric-board.png"), full_page=True)
    page.click("#metric-board a:has-text('ROUGE-L')")
    page.wait_for_selector("#chart-scatter .main-svg", timeout=30_000)
    page.wait_for_selector("#chart-heatmap .main-svg")
    page.screenshot(path=str(artefacts / "9-metric-charts.png"), full_page=True)

    board = page.request.get(f"{base}/api/v1/leaderboards/demo/").json()
    ours = next(system for system in board["systems"] if system["name"] == "Ada's <b>captioner</b>")
    assert round(100 * ours["scores"]["cider_d"]["value"], 1) == shown_cider  # the page shows it ×100
    assert submission.is_public and ours["paper_url"] == "https://example.org/ada"
