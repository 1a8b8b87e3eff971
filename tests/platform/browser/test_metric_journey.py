"""A metric researcher's loop in a real browser against a live server and a real worker: download
the demo dataset's candidates from its page, score them offline (here a word-overlap metric of our
own), upload the scores through the form, watch the correlations arrive on the metric's page, and
find the metric on /metrics/ with its interval and cluster rank, private until published.

Screenshots are kept in test-artifacts/browser/ (or $CAPBENCH_TEST_ARTIFACTS)."""

from __future__ import annotations

import json
import re

import pytest

from scoring.services.planning import dataset_plan
from tests.platform.scoring.workers import wait_until
from workbench.models import MetricUpload

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def overlap(candidate: str, references: list[str]) -> float:
    """Our metric: the best share of the candidate's words found in one reference."""
    words = candidate.lower().split()
    return max(len(set(words) & set(r.lower().split())) / max(len(words), 1) for r in references)


def test_a_metric_researcher_uploads_scores_and_finds_the_metric_ranked(
    live_server, workers, browser_page, demo_dataset, tmp_path, artefacts, django_user_model
):
    page, base = browser_page, live_server.url
    workers.start("metrics", CAPBENCH_METRIC_PLUGINS=None)
    dataset_plan(dataset=demo_dataset, slugs=["rouge_l"])  # a built-in metric to be ranked against
    django_user_model.objects.create_user("grace", password="correct horse battery staple 9")
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", "grace")
    page.fill("#id_password", "correct horse battery staple 9")
    page.click("main button[type=submit]")
    page.wait_for_url(f"{base}/submissions/mine/")

    page.goto(f"{base}/datasets/demo/")
    with page.expect_download() as download:
        page.click("a[href$='candidates.jsonl']")
    candidates = [json.loads(line) for line in download.value.path().read_text().splitlines()]
    assert candidates and set(candidates[0]) >= {"caption_id", "candidate", "references", "image"}
    scores = tmp_path / "overlap.jsonl"
    scores.write_text(
        "\n".join(
            json.dumps({"caption_id": row["caption_id"], "score": overlap(row["candidate"], row["references"])})
            for row in candidates
        )
    )

    page.goto(f"{base}/metrics/")
    page.click("a[href='/submit/metric/']")
    page.wait_for_url(f"{base}/submit/metric/")
    page.fill("#id_name", "Word overlap")
    page.fill("#id_description", "The best share of a candidate's words found in one reference.")
    page.fill("#id_code_url", "https://example.org/overlap")
    page.set_input_files("#id_scores_demo", str(scores))
    assert not page.is_checked("#id_is_public")  # private unless asked
    page.screenshot(path=str(artefacts / "metric-1-upload.png"), full_page=True)
    page.click("#metric-form button[type=submit]")
    page.wait_for_url(re.compile(re.escape(f"{base}/metrics/word-overlap-") + r"[0-9a-f]{6}/$"))
    path = page.url.removeprefix(base)  # an uploaded metric's slug carries a random suffix
    wait_until(lambda: MetricUpload.objects.get().status == "done", 120, workers, "the metric's correlations")
    wait_until(
        lambda: page.request.get(f"{base}/api/v1/correlations/?dataset=demo&metric=rouge_l").json()["count"],
        120,
        workers,
        "ROUGE-L's correlations",
    )
    page.reload()
    checks = page.inner_text("#integrity")
    assert f"{len(candidates)} of {len(candidates)} (100.0%)" in checks, checks
    assert re.search(r"\[\d+\.\d, \d+\.\d\]", page.inner_text("#correlations"))
    page.screenshot(path=str(artefacts / "metric-2-page.png"), full_page=True)

    page.goto(f"{base}/metrics/")
    row = page.locator(f"#metric-board tbody tr:has(a[href='{path}'])")
    text = row.inner_text()
    assert "submitted by grace" in text and "private: only you" in text, text
    assert re.search(r"#\d+ \d+\.\d\s*\[\d+\.\d, \d+\.\d\]", text), text  # a cluster, a value, its interval
    page.screenshot(path=str(artefacts / "metric-3-board.png"), full_page=True)

    # Published from "my metrics": everyone sees it; until then nobody else did.
    anonymous = page.context.browser.new_page()
    listed = f'href="{path}"'  # its row (the family "Word overlap (n-grams, METEOR)" is another name)
    assert listed not in anonymous.goto(f"{base}/metrics/").text()
    page.goto(f"{base}/metric-submissions/mine/")
    page.click("#my-metrics button:has-text('make public')")
    wait_until(lambda: listed in anonymous.goto(f"{base}/metrics/").text(), 60, workers, "the published metric")
    anonymous.close()
