"""A new user's whole journey in a real browser (Playwright driving Debian's Chromium) against a
live server and a real worker: sign up, upload, watch the scoring finish, find the system on the
board, sort a column, open a metric's charts, and fetch the same number through the API.

Screenshots are kept in test-artifacts/browser/ (or $CAPBENCH_TEST_ARTIFACTS). The browser and its
Content-Security-Policy watch are in conftest.py: a violation on any page fails the journey."""

from __future__ import annotations

import json

import pytest

from catalog.models import Item
from scoring.services.planning import dataset_plan
from submissions.models import Submission
from tests.platform.scoring.workers import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_a_new_user_submits_and_finds_the_system_on_the_board(
    live_server, workers, browser_page, demo_dataset, tmp_path, artefacts
):
    page, base = browser_page, live_server.url
    workers.start("browser", CAPBENCH_METRIC_PLUGINS=None)  # the real metrics only
    dataset_plan(dataset=demo_dataset, slugs=["rouge_l"])  # the metric board needs the dataset scored too
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
    assert "unavailable: Stanford CoreNLP 3.6.0 is not provisioned" in page.inner_text("#progress")
    page.screenshot(path=str(artefacts / "3-finished.png"), full_page=True)

    page.click("text=leaderboard")
    page.wait_for_selector("#captioner-board")
    page.click("#captioner-board th a[data-metric=cider_d]")
    page.wait_for_url("**sort=cider_d**")
    first = page.locator("#captioner-board tbody tr").first
    assert "Ada's <b>captioner</b>" in first.inner_text()  # shown as text, never as markup
    assert first.locator("td").first.inner_text().strip() == "1"
    shown_cider = float(first.locator("td[data-metric=cider_d]").inner_text())
    page.screenshot(path=str(artefacts / "4-leaderboard.png"), full_page=True)

    wait_until(
        lambda: page.request.get(f"{base}/api/v1/correlations/?dataset=demo&metric=rouge_l").json()["count"],
        120,
        workers,
        "the dataset's ROUGE-L correlations",
    )
    page.goto(f"{base}/metrics/")
    assert "#1" in page.inner_text("#metric-board")  # the significance cluster of the only metric
    page.screenshot(path=str(artefacts / "5-metric-board.png"), full_page=True)
    page.click("#metric-board a:has-text('ROUGE-L')")
    page.wait_for_selector("#chart-scatter .main-svg", timeout=30_000)
    page.wait_for_selector("#chart-heatmap .main-svg")
    page.screenshot(path=str(artefacts / "6-metric-charts.png"), full_page=True)

    board = page.request.get(f"{base}/api/v1/leaderboards/demo/").json()
    ours = next(system for system in board["systems"] if system["name"] == "Ada's <b>captioner</b>")
    assert round(ours["scores"]["cider_d"]["value"], 4) == shown_cider
    assert submission.is_public and ours["paper_url"] == "https://example.org/ada"
