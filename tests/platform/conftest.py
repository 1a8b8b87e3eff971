"""Fixtures for platform tests: pictures for the demo dataset, users, submissions scored in this
process, the worlds several modules share (a board of five submissions, three submissions for a
campaign, real rows for every kind of id), and clean-up of this run's queues. The builders they use
are tests/platform/factories.py's."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _delete_this_runs_queues(this_runs_queues):
    """Any platform test may enqueue: this run's queues are dropped at the end (tests/conftest.py,
    with demo_dataset, workers and the opt-in fresh_rate_limits and fresh_page_memory)."""


# A 1x1 grey PNG: what every demo image is stored as where a test needs pictures to be shown.
TINY_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010800000000"
    "3a7e9b550000000a49444154789c636800000082008177cd72b60000000049454e44ae426082"
)


@pytest.fixture
def store_pictures(tmp_path):
    """A function that stores a picture for each image of a dataset (datasets import without their
    files), in the file store as configured: campaigns give annotators only captions whose picture
    can be shown (campaigns/pictures.py)."""
    import hashlib

    from django.utils import timezone

    from catalog.models import Media
    from plumbing import storage

    def store(dataset) -> None:
        picture = tmp_path / "picture.png"
        picture.write_bytes(TINY_PNG)
        sha256 = hashlib.sha256(TINY_PNG).hexdigest()
        stored = storage.put_path(f"{sha256[:2]}/{sha256}.png", picture)
        Media.objects.filter(dataset=dataset).update(
            sha256=sha256, size_bytes=len(TINY_PNG), stored_path=stored, attached_at=timezone.now()
        )

    return store


@pytest.fixture
def demo_pictures(demo_dataset, store_pictures, settings, tmp_path):
    """The demo dataset with a stored picture for each of its images (the demo ships without them)."""
    settings.MEDIA_ROOT = tmp_path / "media-store"
    store_pictures(demo_dataset)
    return demo_dataset


@pytest.fixture
def captioner():
    from tests.platform.factories import UserFactory

    return UserFactory(username="captioner")


@pytest.fixture
def scored_submission():
    """Makes a public submission whose captions are each image's reference number `reference`,
    planned for `metrics` and run in this process: `scored_submission(owner, dataset, metrics)`."""
    from scoring.models import EvaluationJob
    from tests.platform.factories import submit
    from tests.platform.scoring.inline import run_jobs

    def make(owner, dataset, metrics: list[str], *, reference: int = 0, method: str = "Scored"):
        submission = submit(
            owner, dataset, method, caption=lambda item: item.references[reference], metrics=metrics, plan=True
        )
        run_jobs(EvaluationJob.objects.filter(system=submission.system))
        submission.refresh_from_db()
        return submission

    return make


@pytest.fixture
def board(demo_dataset, settings):
    """Five submissions on the demo dataset, scored in this process: "long" (six words a caption,
    with a paper), "short" (two) and "tie" (two, from another account), "broken" (its test_broken
    job failed) and "hidden" (private); and their "owner". Built once per process for each place it
    starts from and the metrics registered, copied back after (tests/worlds.py)."""
    import tests.platform.scoring.plugins  # noqa: F401  (test_words and friends)
    from scoring.models import EvaluationJob
    from scoring.services.lifecycle import job_end
    from tests.platform.factories import UserFactory, submit, words
    from tests.platform.scoring.inline import run_jobs
    from tests.worlds import kept, metric_registry

    settings.CAPBENCH_SUBMISSIONS_CONCURRENT = 20

    def scored(who, name: str, count: int, metrics: list[str], **extra):
        return submit(who, demo_dataset, name, caption=words(count), metrics=metrics, plan=True, **extra)

    def built():
        owner = UserFactory(username="owner")
        both = ["test_words", "rouge_l"]
        made = {
            "long": scored(owner, "Long captions", 6, both, paper_url="https://example.org/paper"),
            "short": scored(owner, "Short captions", 2, both),
            # The same file as "Short captions": from another account (the same one would be a duplicate).
            "tie": scored(UserFactory(username="colleague"), "Also short", 2, ["test_words"]),
            "broken": scored(owner, "Broken", 3, ["test_words", "test_broken"]),
            "hidden": scored(owner, "Private one", 9, ["test_words"], public=False),
        }
        run_jobs(EvaluationJob.objects.exclude(metric_version__metric__slug="test_broken"))
        for job in EvaluationJob.objects.filter(metric_version__metric__slug="test_broken"):
            job_end(job_id=job.pk, status="failed", error="boom")
        return {**made, "owner": owner}

    return kept("board", built, inputs=metric_registry())


@pytest.fixture
def kept_keys(fresh_page_memory):
    """`kept_keys(prefix)`: how many keys this run has under `prefix` in Valkey (none at the start)."""
    from django.core.cache import cache

    def count(prefix: str) -> int:
        return len(list(cache._cache.get_client().scan_iter(match=cache.make_key(prefix) + "*")))

    return count


@pytest.fixture
def three(demo_dataset, demo_pictures, captioner):
    """Three public submissions on the demo dataset (its pictures stored), for a campaign: "good",
    "poor" (another owner's), and "later private", which its owner will make private."""
    from tests.platform.factories import UserFactory, submit

    return {
        "good": submit(captioner, demo_dataset, "Good captioner"),
        "poor": submit(UserFactory(username="other"), demo_dataset, "Poor captioner"),
        "later private": submit(captioner, demo_dataset, "Soon private captioner"),
    }


@pytest.fixture
def world(demo_dataset, captioner):
    """Real rows for every kind of id a route takes: the demo dataset, metrics, a public scored
    submission (one caption a formula, a negative score), a withdrawn one and a stranger's private
    one, correlations and a significance result."""
    from catalog.models import Item, Media
    from catalog.uploads.services import upload_withdraw
    from scoring.models import CorrelationResult, EvaluationJob, Metric, Score, SignificanceResult, SystemScore
    from scoring.services.metrics import metrics_sync
    from submissions.services import SUBMISSIONS
    from tests.platform.factories import UserFactory, submit

    metrics_sync()
    bleu = Metric.objects.select_related("current_version").get(slug="bleu_4")
    stranger = UserFactory(username="stranger")
    public = submit(captioner, demo_dataset, "+cmd", caption="a dog runs")
    first = public.system.captions.order_by("item__external_id").first()
    first.text = '=HYPERLINK("http://x")'
    first.save(update_fields=["text"])
    version = bleu.current_version
    Score.objects.bulk_create(
        [
            Score(
                caption=caption,
                metric_version=version,
                value=-0.25 if caption == first else 0.5,
                input_key=f"fuzz{caption.pk}".encode(),
                error="-not a formula" if caption == first else "",
            )
            for caption in public.system.captions.all()
        ]
    )
    EvaluationJob.objects.create(
        purpose="submission",
        dataset=demo_dataset,
        system=public.system,
        metric_version=version,
        status="done",
        total=100,
        done=100,
    )
    SystemScore.objects.create(
        system=public.system, metric_version=version, value=-1.5, low=-1.6, high=-1.4, count=100, images=100
    )
    withdrawn = submit(captioner, demo_dataset, "Old", caption="an old caption", file_name="old.json")
    upload_withdraw(upload=withdrawn, kind=SUBMISSIONS)
    private = submit(
        stranger, demo_dataset, "Secret", caption="a secret caption", file_name="secret.json", public=False
    )
    CorrelationResult.objects.create(
        metric_version=version,
        dataset=demo_dataset,
        dimension="expert",
        statistic="tau_c",
        level="caption",
        protocol="flickr8k-expert/paper@1",
        value=0.3,
        low=0.2,
        high=0.4,
        n=100,
    )
    significance = SignificanceResult.objects.create(
        dataset=demo_dataset,
        protocol="flickr8k-expert/paper@1",
        level="caption",
        dimension="expert",
        statistic="tau_c",
        metrics=["bleu_4", "cider_d"],
        values=[0.3, 0.2],
        p_values=[[None, 0.01], [None, None]],
        ranks=[1, 2],
    )
    from leaderboards.snapshots import board_refresh

    board_refresh(dataset_id=demo_dataset.pk)
    return {
        "dataset": demo_dataset,
        "user": captioner,
        "stranger": stranger,
        "public": public,
        "withdrawn": withdrawn,
        "private": private,
        "metric": bleu,
        "significance": significance,
        "item": Item.objects.filter(dataset=demo_dataset).order_by("id").first(),
        "media": Media.objects.filter(dataset=demo_dataset).order_by("id").first(),
    }
