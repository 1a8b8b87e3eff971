"""What a first visit to each main page costs in a real browser (Playwright driving Debian's
Chromium, an empty cache per page) against the platform served as `make run` serves it: gunicorn with
our settings, DEBUG off, collectstatic done (WhiteNoise serving hashed, compressed static files).

Per page: bytes transferred (encoded, what went over the wire, headers included), bytes decoded,
requests, DOMContentLoaded and load (ms from the navigation's start), the page's width at a 390 px
viewport (document.documentElement.scrollWidth; over 390 means horizontal scrolling) and what a
second visit in the same browser transfers (the hashed static files come from its cache). Every page
is loaded at 390 × 844; a page with charts is scrolled to them and counted once they are drawn.

    DATABASE_URL=... REDIS_URL=... python -m bench.pages [--viewport 390]

Point it at a scratch database: it adds the demo dataset (scored with a few reference metrics, in
this process), a public submission on it, and bench/serve.py's 10 datasets × 200 systems × 40
metrics (removed at the end). Target: no metric page over 1.5 MB on first load; every page ≤ 390 px.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.request

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402

# bench/serve.py: importing it sets DJANGO_SETTINGS_MODULE, DEBUG off and the rate limits off, and sets Django up.
from bench import serve  # noqa: E402
from capbench.run import DEMO_DATASET, DEMO_SLUG, DEMO_TITLE  # noqa: E402
from catalog.models import Caption, Dataset, Item, System  # noqa: E402
from scoring.models import CorrelationResult, EvaluationJob, JobBatch, Metric  # noqa: E402
from scoring.services.batches import batch_run  # noqa: E402
from scoring.services.finalize import job_finalize  # noqa: E402
from scoring.services.planning import dataset_plan  # noqa: E402
from submissions.models import Submission  # noqa: E402
from submissions.services import MethodInfo, submission_create, submission_plan  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
METRICS = ["bleu_4", "cider_d", "rouge_l"]  # quick reference metrics: the demo's charts and columns
CHARTED = "rouge_l"
OWNER = "bench-pages"


def run_jobs(jobs) -> None:
    """What a worker does with each job, in this process: its batches, then its finalisation."""
    for job in jobs:
        for batch_id in JobBatch.objects.filter(job=job).order_by("index").values_list("pk", flat=True):
            if batch_run(batch_id=batch_id, worker="bench-pages@local").job_complete:
                job_finalize(job_id=job.pk)


def demo() -> tuple[Dataset, Item, Submission]:
    """`make run`'s demo dataset (imported once), scored with METRICS, and a public submission on it."""
    call_command("datasets", "import", "flickr8k-expert", str(DEMO_DATASET), "--slug", DEMO_SLUG, "--title", DEMO_TITLE)
    dataset = Dataset.objects.get(slug=DEMO_SLUG)
    if not CorrelationResult.objects.filter(dataset=dataset, metric_version__metric__slug=CHARTED).exists():
        run_jobs(job for job in dataset_plan(dataset=dataset, slugs=METRICS) if job.status != EvaluationJob.Status.DONE)
    owner, _ = get_user_model().objects.get_or_create(username=OWNER)
    submission = Submission.objects.filter(owner=owner, dataset=dataset, status=Submission.Status.DONE).first()
    if submission is None:
        content = [
            {"image_id": item.external_id, "caption": (item.references or ["a picture"])[-1]}
            for item in Item.objects.filter(dataset=dataset)
        ]
        submission = submission_create(
            owner=owner,
            dataset=dataset,
            file_name="bench-pages.json",
            content=json.dumps(content).encode(),
            method=MethodInfo("Bench pages captioner"),
            metrics=METRICS,
            is_public=True,
        )
        run_jobs(submission_plan(submission_id=submission.pk))
    item = Item.objects.filter(dataset=dataset, captions__in=Caption.objects.own()).distinct().order_by("pk").first()
    assert item is not None
    return dataset, item, submission


def measure(browser, base: str, path: str, width: int, charts: bool) -> dict:
    """One first visit (an empty cache) and a second one in the same browser context."""
    context = browser.new_context(viewport={"width": width, "height": 844})
    page = context.new_page()
    session = context.new_cdp_session(page)
    session.send("Network.enable")
    counts = {"requests": 0, "encoded": 0, "decoded": 0}

    def sent(_event) -> None:
        counts["requests"] += 1

    def received(event) -> None:
        counts["decoded"] += event["dataLength"]

    def finished(event) -> None:
        counts["encoded"] += event["encodedDataLength"]

    session.on("Network.requestWillBeSent", sent)
    session.on("Network.dataReceived", received)
    session.on("Network.loadingFinished", finished)
    response = page.goto(base + path, wait_until="load")
    assert response is not None and response.status == 200, f"{path}: {response and response.status}"
    drawn = None
    if charts:
        page.locator(".chart").first.scroll_into_view_if_needed()
        page.wait_for_selector(".chart .main-svg", timeout=60_000)
        drawn = page.evaluate("performance.now()")
    page.wait_for_load_state("networkidle")
    timing = page.evaluate(
        """() => { const n = performance.getEntriesByType("navigation")[0];
                   return {dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd,
                           width: document.documentElement.scrollWidth}; }"""
    )
    first = dict(counts)
    for key in counts:
        counts[key] = 0
    page.goto(base + path, wait_until="load")
    if charts:
        page.locator(".chart").first.scroll_into_view_if_needed()
        page.wait_for_selector(".chart .main-svg", timeout=60_000)
    page.wait_for_load_state("networkidle")
    context.close()
    return {**first, **timing, "drawn": drawn, "repeat": counts["encoded"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--viewport", type=int, default=390, help="the viewport's width (px)")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API keeps a loop here
    from playwright.sync_api import sync_playwright

    call_command("migrate", "--noinput", verbosity=0)
    call_command("collectstatic", "--noinput", verbosity=0)
    started = time.perf_counter()
    board_slug, _ = serve.build()
    dataset, item, submission = demo()
    human = System.objects.get(dataset=dataset, kind=System.Kind.HUMAN)  # the comparison's other side
    print(f"data in {time.perf_counter() - started:.1f} s", flush=True)
    pages = {
        "home": ("/", False),
        "dataset list": ("/datasets/", False),
        "dataset page": (f"/datasets/{dataset.slug}/", False),
        "board (demo)": (f"/datasets/{dataset.slug}/leaderboard/", False),
        "board 200×40": (f"/datasets/{board_slug}/leaderboard/", False),
        "/metrics/": ("/metrics/", False),
        "metric page": (f"/metrics/{CHARTED}/?dataset={dataset.slug}", True),
        "item page": (f"/datasets/{dataset.slug}/items/{item.pk}/", False),
        "submission": (f"/submissions/{submission.pk}/", False),
        "system page": (f"/datasets/{dataset.slug}/systems/{submission.system.slug}/", False),
        "compare": (f"/datasets/{dataset.slug}/compare/?a={submission.system.slug}&b={human.slug}", False),
        "login": ("/accounts/login/", False),
    }
    port = serve.free_port()
    server = serve.serve("gunicorn", port)
    base = f"http://127.0.0.1:{port}"
    try:
        for path, _ in pages.values():  # every worker process warmed: counted is serving, not first imports
            for _ in range(2 * ((os.cpu_count() or 1) + 1)):
                urllib.request.urlopen(base + path, timeout=60).read()  # noqa: S310  (our own server)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            print(f"first visit, empty cache, {args.viewport} × 844 viewport; KB = 1,000 bytes")
            print(
                f"{'page':14} {'transferred KB':>14} {'decoded KB':>11} {'requests':>9} {'DCL ms':>7} "
                f"{'load ms':>8} {'charts ms':>9} {'width px':>9} {'again KB':>9}"
            )
            for name, (path, charts) in pages.items():
                found = measure(browser, base, path, args.viewport, charts)
                drawn = f"{found['drawn']:9.0f}" if found["drawn"] is not None else f"{'—':>9}"
                print(
                    f"{name:14} {found['encoded'] / 1000:14.1f} {found['decoded'] / 1000:11.1f} "
                    f"{found['requests']:9d} {found['dcl']:7.0f} {found['load']:8.0f} {drawn} "
                    f"{found['width']:9d} {found['repeat'] / 1000:9.1f}",
                    flush=True,
                )
            browser.close()
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)
    with transaction.atomic():
        Dataset.objects.filter(slug__startswith=serve.PREFIX).delete()
        Metric.objects.filter(slug__startswith="bench_").delete()
    return 0


if __name__ == "__main__":
    sys.exit(main())
