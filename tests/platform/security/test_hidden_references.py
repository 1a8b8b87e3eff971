"""The hidden-reference leak test: a hidden test set's references, human judgments and per-caption
reference-based scores appear on no URL for anyone but staff.

Two datasets hide their references: a captioner benchmark (COCO-style, with a public submission
scored per caption) and a meta-evaluation set (the demo's Flickr8k-Expert slice, with judgments,
scores and correlations). Every reference carries a marker, so do the annotators' names, the
judgments' details and the details of reference-based scores; the per-caption values of a
reference-based metric are a number no other row has. A live rating campaign on the hidden
benchmark carries its annotators' pseudonyms: its per-annotator rows, agreement and export are
staff's too. A reference-free metric's per-caption scores may be shown: they carry their own
marker, the control that the crawl reaches per-caption scores. Every URL pattern and API path is
requested (plain, searched for a marker, as a download; each query where the plain request read
one of its names: crawl.py) by an anonymous visitor and the submissions' owner; staff crawl too
and must see the markers (so the test can fail)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from campaigns.models import Campaign
from campaigns.services.answers import annotation_answer
from campaigns.services.assignment import task_next
from campaigns.services.creation import CampaignSpec, campaign_create, campaign_status_set
from campaigns.services.results import campaign_refresh
from catalog.importers.registry import read_bundle
from catalog.models import Caption, Dataset, Item, Judgment, System
from catalog.services.imports import dataset_import
from leaderboards.snapshots import board_refresh
from scoring.models import EvaluationJob, Metric, Score, SystemScore
from scoring.services.correlations import dataset_correlations
from scoring.services.metrics import metrics_sync
from submissions.models import Submission
from submissions.services import MethodInfo, submission_create
from tests.platform.security.crawl import crawl, crawl_urls, schema_paths
from tests.platform.support.query_plans import analyze_tables

pytestmark = [pytest.mark.django_db, pytest.mark.slow, pytest.mark.usefixtures("fresh_page_memory")]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "datasets"
REFERENCE, JUDGE, SCORE, FREE = "qzrefmark", "qzjudgemark", "qzscoremark", "qzfreemark"
HIDDEN = (REFERENCE, JUDGE, SCORE)
REFERENCE_VALUE = "0.123456"  # every per-caption score of the reference-based metric (system-level: 0.5)
REFERENCE_SHOWN = (REFERENCE_VALUE, "0.1235", "12.35", "12.3456")


@dataclass
class World:
    benchmark: Dataset
    rated: Dataset
    submission: Submission
    other: Submission  # a second public submission, to compare with
    owner: object
    staff: object
    campaign: str = ""  # a rated live campaign on the hidden benchmark
    pseudonyms: tuple[str, ...] = ()  # its annotators' names


def _mark_references(dataset: Dataset) -> None:
    for item in Item.objects.filter(dataset=dataset):
        item.references = [f"a {REFERENCE} reference {n} of item {item.pk}" for n in range(3)]
        item.save(update_fields=["references"])


def _scores(captions, system: System | None, dataset: Dataset) -> None:
    """A reference-based (BLEU-4) and a reference-free (CLIP-S) score of every caption, with a
    finished job each, so boards, cards and correlations have numbers."""
    purpose = EvaluationJob.Purpose.SUBMISSION if system else EvaluationJob.Purpose.DATASET
    for slug, marker, value in (("bleu_4", SCORE, float(REFERENCE_VALUE)), ("clip_s", FREE, 0.654321)):
        version = Metric.objects.get(slug=slug).current_version
        EvaluationJob.objects.create(
            purpose=purpose, dataset=dataset, system=system, metric_version=version, status="done", total=1, done=1
        )
        Score.objects.bulk_create(
            [
                Score(
                    caption=caption,
                    metric_version=version,
                    value=value + caption.pk % 3 * 1e-7 if system is None else value,
                    input_key=f"{slug}{caption.pk}".encode(),
                    detail={"note": f"{marker} detail"},
                )
                for caption in captions
            ]
        )
        if system is not None:
            SystemScore.objects.create(
                system=system, metric_version=version, value=0.5, low=0.4, high=0.6, count=len(captions)
            )
        else:
            dataset_correlations(dataset=dataset, metric_version=version)


@pytest.fixture
def world(demo_dataset, django_user_model, settings, tmp_path, store_pictures) -> World:
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.CAPBENCH_RATE_LIMITS_ENABLED = False  # thousands of requests from one address
    metrics_sync()
    owner = django_user_model.objects.create_user("owner", password="a long test password")
    staff = django_user_model.objects.create_user("organiser", password="a long test password", is_staff=True)

    bundle = read_bundle("coco-captions", FIXTURES / "coco-captions" / "captions_val2014.json")
    benchmark = dataset_import(bundle=bundle, source_path="test", slug="hidden-bench", references_hidden=True).dataset
    _mark_references(benchmark)
    results = [
        {"image_id": int(item.external_id), "caption": f"a dog on item {item.external_id}"}
        for item in Item.objects.filter(dataset=benchmark)
    ]
    submission, other = (
        submission_create(
            owner=owner,
            dataset=benchmark,
            file_name=f"results-{n}.json",
            content=json.dumps([{**row, "caption": f"{row['caption']} take {n}"} for row in results]).encode(),
            method=MethodInfo(f"open captioner {n}", "a public method", "", ""),
            is_public=True,
        )
        for n in (1, 2)
    )
    for scored in (submission, other):  # two, so the compare page's explorer opens
        _scores(list(Caption.objects.filter(system=scored.system)), scored.system, benchmark)
    board_refresh(dataset_id=benchmark.pk)

    rated = demo_dataset
    Dataset.objects.filter(pk=rated.pk).update(references_hidden=True)
    rated.refresh_from_db()
    _mark_references(rated)
    judgments = Judgment.objects.filter(caption__item__dataset=rated)
    for judgment in judgments:
        judgment.annotator = f"{JUDGE}-{judgment.annotator}"
        judgment.detail = {"note": f"{JUDGE} detail"}
    Judgment.objects.bulk_update(judgments, ["annotator", "detail"])
    _scores(list(Caption.objects.own().filter(item__dataset=rated)), None, rated)
    board_refresh(dataset_id=rated.pk)
    store_pictures(benchmark)  # a campaign shows only captions whose picture it can show
    campaign = _campaign(benchmark, [submission.system, other.system], staff, django_user_model)
    pseudonyms = tuple(
        sorted(set(Judgment.collected.filter(source=campaign.source).values_list("annotator", flat=True)))
    )
    analyze_tables()  # the world is in the test's transaction: plan for its real sizes
    return World(benchmark, rated, submission, other, owner, staff, campaign.slug, pseudonyms)


def _campaign(dataset: Dataset, systems: list[System], staff, users) -> Campaign:
    """A live rating campaign on the hidden benchmark, answered by two people, its results computed."""
    spec = CampaignSpec(slug="hidden-live", title="Hidden ratings", dataset=dataset, systems=systems, gold_rate=0)
    campaign = campaign_create(spec=spec, created_by=staff)
    raters = [users.objects.create_user(f"rater{n}") for n in range(2)]
    for turn in range(6):
        for rater in raters:
            task = task_next(campaign=campaign, annotator=rater)
            value = 1 + (task.item_id + turn) % 5
            annotation_answer(annotation_id=task.pk, annotator=rater, values={d["key"]: value for d in campaign.rubric})
    campaign_refresh(campaign_id=campaign.pk)
    # Closed: an open one hides its systems' captions from everyone (blind annotation), so the crawl
    # would never reach the per-caption pages whose references this test looks for; a closed one's
    # answers export is public elsewhere, so this crawl also checks it stays staff's here.
    return campaign_status_set(campaign=campaign, status=Campaign.Status.CLOSED)


def _fill(world: World) -> dict[str, list[str]]:
    items = [
        Item.objects.filter(dataset=dataset).order_by("id").values_list("pk", flat=True).first()
        for dataset in (world.benchmark, world.rated)
    ]
    ints = [str(world.submission.pk), str(world.submission.system_id), *map(str, items)]
    slugs = [world.benchmark.slug, world.rated.slug, "bleu_4", "clip_s", world.submission.system.slug]
    return {
        "int": ints,
        "slug": slugs,
        "str": slugs,
        "path": ints[:2],
        "uuid": [],
        "datasets": [world.benchmark.slug, world.rated.slug],
        "systems": [world.submission.system.slug],
        "metrics": ["bleu_4", "clip_s"],
        "badge": ["bleu_4", "clip_s"],
        "campaigns": [world.campaign],
    }


def _queries(world: World) -> list[str]:
    first = Item.objects.filter(dataset=world.benchmark).order_by("id").first()
    return [
        "",
        f"?q={REFERENCE}&search={REFERENCE}",
        f"?dataset={world.rated.slug}&system={world.submission.system.slug}&metric=bleu_4",
        "?download=csv",
        "?format=csv",
        f"?a={world.submission.system.slug}&b={world.other.system.slug}&order=differ&metric=bleu_4",
        f"?dataset={world.rated.slug}&metric=bleu_4&page=1&caption={first.pk if first else ''}",
    ]


def _leaks(body: str, url: str) -> list[str]:
    found = [marker for marker in HIDDEN if marker in body and marker not in url.lower()]
    shown = [value for value in REFERENCE_SHOWN if value in body]  # as stored, to 4 places, or ×100
    return found + shown


def test_no_url_shows_a_hidden_test_sets_references_or_judgments_to_anyone_but_staff(client, world):
    urls, queries = crawl_urls(_fill(world), schema_paths(client)), _queries(world)
    print(f"hidden-reference crawl: {len(urls)} URLs x {len(queries)} queries x 3 viewers")
    assert any("/items/" in url for url in urls)
    assert any("/api/v1/scores/" in url for url in urls)
    # Anonymous stands for every signed-in stranger too (the rule asks only "staff?"); the submitter is
    # the viewer with the most to see short of staff.
    for name, user in {"anonymous": None, "the submitter": world.owner}.items():
        client.logout()
        if user is not None:
            client.force_login(user)
        seen = crawl(client, urls, queries, {world.benchmark.slug, world.rated.slug})
        for url, body in seen.items():
            shown = _leaks(body, url) + [name for name in world.pseudonyms if name in body]
            assert not shown, f"{name} sees {shown} at {url}:\n{body[:800]}"
        # The control: per-caption scores of a reference-free metric are shown, so the crawl reaches them.
        assert sum(FREE in body for body in seen.values()) > 3, f"the crawl never reached per-caption scores as {name}"
        # A search for a reference's words finds nothing (it would tell, word by word, what they say).
        browser = seen[f"/datasets/{world.benchmark.slug}/items/?q={REFERENCE}&search={REFERENCE}"]
        assert "0 items matching" in browser
        # The explorer opened (two systems compared), with the reference-free metric only.
        compared = next(
            body for url, body in seen.items() if url.startswith(f"/datasets/{world.benchmark.slug}/compare/?a=")
        )
        assert compared.startswith("200")
        assert "hidden test set: image by image" in compared
        # The systems' mean human ratings of the hidden meta-evaluation set are not on its board.
        board = seen[f"/api/v1/leaderboards/{world.rated.slug}/"]
        assert '"people_dimension":null' in board.replace(" ", "")
        assert '"people":' not in board

    client.force_login(world.staff)
    staff_sees = crawl(client, urls, queries)
    for marker in (*HIDDEN, REFERENCE_VALUE):
        assert sum(marker in body for body in staff_sees.values()) > 2, f"staff never see {marker}: the crawl is blind"
    # Staff see the campaign's annotators (its page, the API, the export): the crawl reaches them.
    assert world.pseudonyms and all(
        sum(name in body for body in staff_sees.values()) >= 2 for name in world.pseudonyms
    ), "staff never see the campaign's annotators: the crawl is blind"


def test_the_flag_is_the_only_difference(client, world):
    """The same item page shows references and ratings once the references are made public again."""
    item = Item.objects.filter(dataset=world.rated).order_by("id").first()
    page = f"/datasets/{world.rated.slug}/items/{item.pk}/"
    hidden = client.get(page).content.decode()
    assert REFERENCE not in hidden
    assert JUDGE not in hidden
    assert "hidden test set" in hidden
    Dataset.objects.filter(pk=world.rated.pk).update(references_hidden=False)
    shown = client.get(page).content.decode()
    assert REFERENCE in shown
    assert JUDGE in shown
    assert "hidden test set" not in shown
