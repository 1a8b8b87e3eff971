"""The leak test: private and withdrawn submissions are their owner's alone, on every URL there is.
Submitted metrics too: a private and a withdrawn one carry the markers in their names, descriptions
and links, a public one is the control. And live human evaluation: a campaign rated the withdrawn
submission's captions while they were public, beside the public one's.

A private and a withdrawn submission carry unique markers in their captions, method name,
description and links; a public one carries its own (the control: the crawl must find it, so the
test can fail). Every URL pattern of the project (walked from the URLconf and filled with real
ids, slugs and keys) and every API path of the OpenAPI schema is requested, plain, as a search for
each marker and as a download (each query where the plain request read one of its names or the
whole query: tests/platform/security/crawl.py), by an anonymous visitor and by another signed-in
user. Two checks:

- no response contains a hidden marker (responses to URLs that themselves carry the marker, such
  as a search echoing its query, are left to the second check);
- the same crawl after the hidden submissions are deleted answers byte for byte the same (once
  CSRF tokens and relative times are masked): no count, page number, row or order depends on
  them.

The data download (`/accounts/export/`, a POST with the password, so outside the crawl of GETs) is
fetched too: another user's holds none of the owner's markers, the owner's all of them.

New URL patterns are covered without editing this file.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.db import transaction

from campaigns.models import Campaign, CampaignResults
from campaigns.rubrics import ACCR
from campaigns.services.answers import annotation_answer
from campaigns.services.assignment import task_next
from campaigns.services.results import campaign_refresh
from catalog.models import Caption, Item, Judgment, Media, System
from catalog.services.candidates import caption_keys
from catalog.uploads.services import upload_withdraw
from leaderboards.citable import snapshot_freeze
from leaderboards.models import CitableSnapshot
from leaderboards.snapshots import board_refresh
from scoring.models import CorrelationResult, EvaluationJob, Metric, MetricVersion, Score, SystemScore
from scoring.services.correlations import dataset_significance
from scoring.services.metrics import metrics_sync
from submissions.models import Submission
from submissions.services import SUBMISSIONS
from tests.platform.factories import UserFactory, submit
from tests.platform.security.crawl import crawl, crawl_urls, schema_paths
from tests.platform.support.query_plans import analyze_tables
from workbench.models import MetricSubmission
from workbench.services import METRICS, MetricInfo, ScoresFile, metric_submit, upload_correlate

pytestmark = [pytest.mark.django_db, pytest.mark.slow, pytest.mark.usefixtures("fresh_page_memory")]

PRIVATE, WITHDRAWN, PUBLIC = "qzprivmark", "qzwithmark", "qzpubmark"
HIDDEN = (PRIVATE, WITHDRAWN)


@dataclass
class World:
    dataset_slug: str
    owner: object
    stranger: object
    hidden: list[Submission]
    public: Submission
    keys: list[str]
    metrics: list[MetricSubmission]  # private, withdrawn, public
    campaign: str = ""  # a live campaign's slug: the withdrawn submission and the public one, rated


def _submit(owner, dataset, marker: str, *, public: bool) -> Submission:
    """A submission whose every text carries `marker`: its captions, name, description and links."""
    return submit(
        owner,
        dataset,
        f"{marker} captioner",
        caption=lambda item: f"a {marker} dog number {item.pk}",
        file_name=f"{marker}.json",
        public=public,
        description=f"our {marker} method, unpublished",
        paper_url=f"https://example.org/{marker}/paper",
        code_url=f"https://example.org/{marker}/code",
    )


def _scores(submission: Submission, marker: str, version: MetricVersion, tmp_path, settings) -> str:
    """A score per caption, with the marker in its detail, a finished job and a system number (the
    hidden ones best, so a leak would move ranks), and one generated picture whose file carries the
    marker too (served by key)."""
    value = 0.5 if marker == PUBLIC else 0.9
    EvaluationJob.objects.create(
        purpose="submission",
        dataset=submission.dataset,
        system=submission.system,
        metric_version=version,
        status="done",
        total=100,
        done=100,
    )
    SystemScore.objects.create(
        system=submission.system,
        metric_version=version,
        value=value,
        low=value - 0.1,
        high=value + 0.1,
        count=100,
    )
    key = f"{abs(hash(marker)) % 10**8:08d}".ljust(64, "a")
    picture = Path(settings.MEDIA_ROOT) / "generated" / key[:2] / f"{key}.png"  # in the file store
    picture.parent.mkdir(parents=True, exist_ok=True)
    picture.write_bytes(b"\x89PNG " + marker.encode())
    Score.objects.bulk_create(
        [
            Score(
                caption=caption,
                metric_version=version,
                value=0.25,
                input_key=f"{marker}{caption.pk}".encode(),
                detail={"reply": f"{marker} reasoning", "generated_image": key},
            )
            for caption in Caption.objects.filter(system=submission.system)
        ]
    )
    return key


@pytest.fixture
def world(demo_dataset, django_user_model, tmp_path, settings, monkeypatch, store_pictures) -> World:
    settings.MEDIA_ROOT = tmp_path / "media"
    store_pictures(demo_dataset)  # a campaign shows only captions whose picture it can show
    owner, stranger = UserFactory(username="owner"), UserFactory(username="stranger")
    metrics_sync()
    version = Metric.objects.get(slug="bleu_4").current_version
    private = _submit(owner, demo_dataset, PRIVATE, public=False)
    withdrawn = _submit(owner, demo_dataset, WITHDRAWN, public=True)
    public = _submit(owner, demo_dataset, PUBLIC, public=True)
    keys = [
        _scores(s, m, version, tmp_path, settings)
        for s, m in ((private, PRIVATE), (withdrawn, WITHDRAWN), (public, PUBLIC))
    ]
    metrics = [_metric(owner, demo_dataset, marker) for marker in (PRIVATE, WITHDRAWN, PUBLIC)]
    campaign = _campaign(demo_dataset, [withdrawn.system, public.system], django_user_model)
    # Citable snapshots of both boards, frozen while the withdrawn submission and metric were still
    # public (crawled as number 1): what their owner takes back later must not show there either.
    snapshot_freeze(dataset=demo_dataset, by="curator", note="frozen for the crawl")
    snapshot_freeze(dataset=None, by="curator")
    withdrawn = upload_withdraw(upload=withdrawn, kind=SUBMISSIONS)
    campaign_refresh(campaign_id=campaign.pk)  # what the withdrawal's refresh does
    board_refresh(dataset_id=demo_dataset.pk)  # the stored board holds the hidden rows too
    upload_withdraw(upload=metrics[1], kind=METRICS)
    dataset_significance(dataset=demo_dataset)  # what the withdrawal's task does
    # The world lives in this test's transaction, which the planner's statistics never saw: without
    # them every join is planned for empty tables and the crawl's pages take seconds each.
    analyze_tables()
    return World(demo_dataset.slug, owner, stranger, [private, withdrawn], public, keys, metrics, campaign.slug)


def _campaign(dataset, systems: list[System], users) -> Campaign:
    """A live rating campaign over `systems` (public when it starts), answered by two people, its
    results computed (a people column, live correlations of the metrics that scored its captions)."""
    staff = users.objects.create_user("curator", is_staff=True)
    campaign = Campaign.objects.create(
        dataset=dataset,
        slug="crawl-live",
        title="Crawl ratings",
        rubric=[d.as_json() for d in ACCR],
        gold_rate=0,
        created_by=staff,
    )
    campaign.systems.set(systems)
    raters = [users.objects.create_user(f"rater{n}") for n in range(2)]
    for turn in range(12):
        for rater in raters:
            task = task_next(campaign=campaign, annotator=rater)
            value = 1 + (task.item_id + turn) % 5
            annotation_answer(annotation_id=task.pk, annotator=rater, values={d.key: value for d in ACCR})
    campaign_refresh(campaign_id=campaign.pk)
    return campaign


def _metric(owner, dataset, marker: str) -> MetricSubmission:
    """A submitted metric with the marker in its name, description and links, its correlations and
    clusters computed (the hidden ones' scores follow people best, so a leak would move ranks)."""
    keys = caption_keys(dataset)
    human = dict(Judgment.objects.filter(caption__item__dataset=dataset).values_list("caption_id", "value"))
    lines = [
        json.dumps({"caption_id": key, "score": human.get(pk, 0) + (0.1 if marker == PUBLIC else 0.0) * (pk % 7)})
        for key, pk in keys.items()
    ]
    upload = metric_submit(
        owner=owner,
        info=MetricInfo(
            f"{marker} metric",
            f"our {marker} metric, unpublished",
            f"https://example.org/{marker}/metric-paper",
            f"https://example.org/{marker}/metric-code",
        ),
        files=[ScoresFile(dataset, f"{marker}.jsonl", "\n".join(lines).encode())],
        is_public=marker != PRIVATE,
    )
    upload_correlate(upload_id=upload.pk)
    return upload.submission


def _fillers(world: World) -> dict[str, list[str]]:
    """Real values for each kind of path parameter: hidden and public ids first of all."""
    submissions = [*world.hidden, world.public]
    item = Item.objects.filter(dataset__slug=world.dataset_slug).order_by("id").first()
    media = Media.objects.filter(dataset__slug=world.dataset_slug).exclude(stored_path="").first()
    ints = [str(s.pk) for s in submissions] + [str(item.pk)] + ([str(media.pk)] if media else [])
    ints += [str(s.system_id) for s in submissions] + [str(m.pk) for m in world.metrics]
    ints += [str(pk) for pk in CitableSnapshot.objects.values_list("pk", flat=True)] + ["1"]  # ids and numbers
    slugs = (
        [world.dataset_slug, "bleu_4"] + [s.system.slug for s in submissions] + [m.metric.slug for m in world.metrics]
    )
    strings = world.keys + slugs
    # The admin's <path:object_id> routes answer the same login redirect to anyone not staff: a few ids do.
    metrics = ["bleu_4"] + [m.metric.slug for m in world.metrics]
    return {
        "int": ints,
        "slug": slugs,
        "str": strings,
        "path": ints[:3],
        "uuid": [],
        # Where a path names what its slug is, only slugs of that kind (every hidden one among them).
        "datasets": [world.dataset_slug],
        "systems": [s.system.slug for s in submissions],
        "metrics": metrics,
        "badge": metrics,
        "campaigns": [world.campaign],
    }


def _hidden_values(world: World) -> set[str]:
    """The path values that name a hidden row: URLs holding one are asked with every query."""
    submissions, metrics = world.hidden, world.metrics[:2]
    values = {str(s.pk) for s in submissions} | {str(s.system_id) for s in submissions}
    values |= {s.system.slug for s in submissions} | {str(m.pk) for m in metrics} | {m.metric.slug for m in metrics}
    return values | set(world.keys)


def _urls(world: World, paths: list[str]) -> list[str]:
    # The compare page and API with a hidden system beside the public one (a query only they read).
    pair = f"?a={world.public.system.slug}&b={world.hidden[0].system.slug}"
    compared = [
        f"/datasets/{world.dataset_slug}/compare/{pair}",
        f"/api/v1/leaderboards/{world.dataset_slug}/compare/{pair}",
    ]
    return crawl_urls(_fillers(world), paths) + compared


def _queries(world: World) -> list[str]:
    hidden_system = world.hidden[0].system.slug
    return [
        "",
        f"?q={PRIVATE}&search={PRIVATE}",
        f"?q={WITHDRAWN}&search={WITHDRAWN}",
        f"?system={hidden_system}&dataset={world.dataset_slug}&metric=bleu_4",
        "?download=csv",
        "?download=json",
        "?limit=1000&page_size=5000&sort=bleu_4&order=desc",  # every row on one page, best first
        # a significance page that exists (the clusters name metrics), and the submitted family
        "?protocol=flickr8k-expert/paper@1&dimension=overall&statistic=tau_b&family=submitted",
    ]


@pytest.fixture
def unlimited(settings):
    """The crawl is thousands of requests from one address: the abuse limits are not under test here."""
    settings.CAPBENCH_RATE_LIMITS_ENABLED = False


def test_no_url_shows_a_private_or_withdrawn_submission(client, world, unlimited, fresh_page_memory):
    paths = schema_paths(client)
    urls, queries, hidden = _urls(world, paths), _queries(world), _hidden_values(world)
    print(f"leak crawl: {len(urls)} URLs x {len(queries)} queries x {2} viewers, twice")
    assert any("/api/v1/submissions/" in url for url in urls)
    assert any("/admin/" in url for url in urls)
    viewers = {"anonymous": None, "another user": world.stranger}
    # Each person at an address of their own: the annotation page remembers addresses, and one
    # shared by the owner and the stranger would link their accounts (the sock-puppet rule) between
    # the two crawls, which changes what the stranger is given to rate.
    addresses = {"anonymous": "10.0.0.3", "another user": "10.0.0.2", "owner": "10.0.0.1"}
    seen: dict[str, dict[str, str]] = {}
    for name, user in viewers.items():
        client.logout()
        client.defaults["REMOTE_ADDR"] = addresses[name]
        if user is not None:
            client.force_login(user)
        seen[name] = crawl(client, urls, queries, hidden)
        for url, body in seen[name].items():
            shown = [marker for marker in HIDDEN if marker in body and marker not in url.lower()]
            assert not shown, f"{name} sees {shown} at {url}:\n{body[:600]}"
        found = [url for url, body in seen[name].items() if PUBLIC in body]
        assert len(found) > 10, f"the crawl never reached the public submission's content as {name}"

    # A data download (/accounts/export/, a POST with the password) is the signed-in person's own:
    # another user's holds nothing of the owner's hidden work, nor the owner's public submission as
    # such (its description); the public captions the crawl was given to rate are the stranger's tasks.
    client.force_login(world.stranger)
    stranger_export = _export_text(client)
    assert [marker for marker in (*HIDDEN, f"our {PUBLIC} method") if marker in stranger_export] == []

    # The owner reaches the private content through the same crawl: the crawl can find a leak.
    client.defaults["REMOTE_ADDR"] = addresses["owner"]
    client.force_login(world.owner)
    owner_sees = crawl(client, urls, [""])
    owner_export = _export_text(client)  # and their download
    assert all(marker in owner_export for marker in (*HIDDEN, f"our {PUBLIC} method"))
    assert sum(PRIVATE in body for body in owner_sees.values()) > 5
    assert sum(f"{PRIVATE} metric" in body for body in owner_sees.values()) > 2  # the board, its page, the API
    assert sum(f"{PUBLIC} metric" in body for body in seen["anonymous"].values()) > 2

    with transaction.atomic():
        campaign = Campaign.objects.get(slug=world.campaign)
        computed = _computed_at(campaign)
        for submission in world.hidden:
            System.objects.filter(pk=submission.system_id).delete()
        campaign_refresh(campaign_id=campaign.pk)  # the campaign's results as if they had never been
        _computed_at(campaign, restore=computed)  # (at the same time: only what the results say may differ)
        board_refresh(dataset_id=world.hidden[0].dataset_id)  # the stored board as if they had never been
        Metric.objects.filter(pk__in=[m.metric_id for m in world.metrics[:2]]).delete()
        dataset_significance(dataset=world.hidden[0].dataset)  # the clusters as if they had never been
        # Every page made again from the rows: a board kept from the first crawl would match its own
        # copy (what anonymous visitors are sent does not change with hidden rows, so neither does its key).
        fresh_page_memory()
        for name, user in viewers.items():
            client.logout()
            client.defaults["REMOTE_ADDR"] = addresses[name]
            if user is not None:
                client.force_login(user)
            without = crawl(client, urls, queries, hidden)
            assert without.keys() == seen[name].keys(), (
                f"{name}: other URLs were asked once the hidden rows were gone (their existence shows): a login "
                f"gate moved, a 404 became a 200 or back, or a page read other query names: "
                f"{sorted(without.keys() ^ seen[name].keys())[:5]}"
            )
            differs = [url for url in without if without[url] != seen[name][url]]
            assert not differs, (
                f"{name}: {len(differs)} responses change when the hidden submissions are "
                f"deleted, e.g. {differs[:5]}:\n{_first_difference(seen[name], without, differs[0])}"
            )
        transaction.set_rollback(True)


def _export_text(client) -> str:
    """Everything in the signed-in user's data download (world users share one password), as text."""
    response = client.post("/accounts/export/", {"password": "a long test password"})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    return "\n".join(archive.read(name).decode("utf-8", "replace") for name in archive.namelist())


def _computed_at(campaign: Campaign, restore: dict | None = None) -> dict:
    """When the campaign's results and its live correlations were computed (the API shows it);
    with `restore`, those times put back."""
    rows = {
        (CampaignResults, pk): at
        for pk, at in CampaignResults.objects.filter(campaign=campaign).values_list("pk", "computed_at")
    }
    found = CorrelationResult.objects.filter(protocol=campaign.protocol_key).values_list("pk", "computed_at")
    rows.update({(CorrelationResult, pk): at for pk, at in found})
    for (model, pk), at in (restore or {}).items():
        model.objects.filter(pk=pk).update(computed_at=at)
    return rows


def _first_difference(before: dict[str, str], after: dict[str, str], url: str) -> str:
    a, b = before[url].splitlines(), after[url].splitlines()
    for number, (left, right) in enumerate(zip(a, b, strict=False)):
        if left != right:
            return f"line {number + 1}:\n  with:    {left[:300]}\n  without: {right[:300]}"
    return f"lengths differ: {len(a)} vs {len(b)} lines"
