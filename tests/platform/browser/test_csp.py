"""Every page script runs under the Content-Security-Policy (script-src 'self', no inline script) in
a real browser, and does what it did before: Plotly draws the metric's charts, the upload page takes
a dropped file, a submission's page polls its progress until the scoring ends, and Swagger UI lists
the API's operations. conftest.py fails a test on any violation or uncaught error."""

from __future__ import annotations

import json

import pytest

from catalog.models import Item
from scoring.models import EvaluationJob
from scoring.services.planning import dataset_plan
from submissions.services import MethodInfo, submission_create, submission_plan
from tests.platform.scoring.inline import run_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def _policy_of(response) -> str:
    policy = response.headers.get("content-security-policy", "")
    script_src = policy.split("script-src")[1].split(";")[0].split()
    assert script_src[0] == "'self'" and "'unsafe-inline'" not in script_src, policy
    return policy


def test_page_scripts_run_under_the_policy(
    live_server, browser_page, page_problems, demo_dataset, captioner, tmp_path, artefacts
):
    page, base = browser_page, live_server.url
    run_jobs(dataset_plan(dataset=demo_dataset, slugs=["rouge_l"]))  # correlations: the metric page's charts

    # The policy is enforced: an inline script added to a page is refused, and reported.
    _policy_of(page.goto(f"{base}/"))
    page.evaluate("""() => { const s = document.createElement("script");
                             s.textContent = "window.inlineRan = true"; document.body.appendChild(s); }""")
    page.wait_for_timeout(300)
    assert page.evaluate("window.inlineRan === undefined")
    assert any(v.startswith("script-src") for v in page_problems["csp"]), page_problems
    page_problems["csp"].clear()
    page_problems["console"].clear()

    # Plotly: the scatter on WebGL (regl: the one page that allows 'unsafe-eval'), the rest as SVG.
    _policy_of(page.goto(f"{base}/metrics/rouge_l/"))
    page.wait_for_selector("#chart-scatter .main-svg", timeout=30_000)
    page.wait_for_selector("#chart-scatter canvas.gl-canvas-context", state="attached")
    page.wait_for_selector("#chart-heatmap .main-svg")
    page.wait_for_selector("#chart-distribution .main-svg")
    page.screenshot(path=str(artefacts / "csp-metric-charts.png"), full_page=True)

    # The upload page: a file dropped on the zone is taken and named.
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", "captioner")
    page.fill("#id_password", "a long test password")
    page.click("main button[type=submit]")
    page.wait_for_url(f"{base}/submissions/mine/")
    _policy_of(page.goto(f"{base}/submit/"))
    page.dispatch_event("#dropzone", "dragenter", {"dataTransfer": page.evaluate_handle("new DataTransfer()")})
    assert "over" in page.get_attribute("#dropzone", "class")
    dropped = page.evaluate_handle("""() => { const transfer = new DataTransfer();
        transfer.items.add(new File(['[]'], "dropped.json", {type: "application/json"})); return transfer; }""")
    page.dispatch_event("#dropzone", "drop", {"dataTransfer": dropped})
    assert page.inner_text("#chosen-file") == "Chosen: dropped.json"
    assert page.evaluate("document.querySelector('#id_results').files[0].name") == "dropped.json"
    assert "over" not in page.get_attribute("#dropzone", "class")

    # A submission's page polls its progress and reloads when the scoring has ended.
    content = json.dumps(
        [{"image_id": item.external_id, "caption": "a dog runs"} for item in Item.objects.filter(dataset=demo_dataset)]
    ).encode()
    submission = submission_create(
        owner=captioner,
        dataset=demo_dataset,
        file_name="r.json",
        content=content,
        method=MethodInfo("Polled"),
        metrics=["rouge_l"],
        is_public=True,
    )
    with page.expect_request(f"**/submissions/{submission.pk}/progress.json"):
        _policy_of(page.goto(f"{base}/submissions/{submission.pk}/"))
    assert page.inner_text("#submission-status").lower() == "queued"
    submission_plan(submission_id=submission.pk)
    page.wait_for_selector("#progress tr[data-metric=rouge_l]", timeout=15_000)  # drawn by the poll
    run_jobs(EvaluationJob.objects.filter(system=submission.system))
    page.wait_for_function(
        "() => document.getElementById('submission-status').textContent === 'finished'", timeout=30_000
    )
    page.wait_for_selector("#scores tbody tr td.num")  # the reloaded page lists the scores

    # Swagger UI from its own script (?script), with its operations listed.
    _policy_of(page.goto(f"{base}/api/v1/docs/"))
    page.wait_for_selector(".swagger-ui .opblock", timeout=30_000)
    assert page.locator(".swagger-ui .opblock").count() > 10
    assert "/api/v1/datasets/" in page.inner_text(".swagger-ui")
    page.screenshot(path=str(artefacts / "csp-swagger.png"), full_page=True)
