"""A campaign's export: canonical JSON Lines, the dataset line first, annotators by pseudonym only
(never a user name or id), gold answers left out, and read back by the canonical importer (and
imported as a dataset of its own) with every rating or comparison."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from campaigns.models import Annotation, Campaign
from campaigns.services.creation import campaign_status_set
from campaigns.services.exports import campaign_export_lines
from campaigns.services.identity import pseudonym
from catalog.importers.registry import read_bundle
from catalog.models import Judgment, PairJudgment
from catalog.services.imports import dataset_import
from tests.platform.campaigns.helpers import in_turns, noisy_rubric

pytestmark = pytest.mark.django_db


def written(campaign, tmp_path) -> tuple[list[dict], object]:
    text = "".join(campaign_export_lines(campaign))
    path = tmp_path / f"{campaign.slug}.jsonl"
    path.write_text(text)
    return [json.loads(line) for line in text.splitlines()], path


def test_a_rating_campaigns_export_is_pseudonymous_canonical_and_reads_back(
    make_campaign, make_user, submitted, tmp_path
):
    campaign = make_campaign("export-me", ratings_wanted=2, gold_rate=0.3)
    people = [make_user(name) for name in ("ann", "ned", "eve")]
    noisy = noisy_rubric(campaign)

    def attentive(task, user) -> dict:  # passes its gold checks (a decoy rated 1), else rates as it sees fit
        return {d["key"]: 1 for d in campaign.rubric} if task.is_gold else noisy(task, user)

    in_turns(campaign, people, attentive, rounds=10)
    answered = Annotation.objects.filter(campaign=campaign, status=Annotation.Status.ANSWERED)
    real = answered.filter(decoy__isnull=True).count()
    assert 0 < real < 30
    assert answered.filter(decoy__isnull=False).exists()  # some gold checks, left out below

    lines, path = written(campaign, tmp_path)
    assert lines[0]["type"] == "dataset"
    assert lines[0]["format"] == "capbench-canonical"
    assert lines[0]["kind"] == "rating"
    assert lines[0]["dimensions"] == [d["key"] for d in campaign.rubric]
    assert lines[0]["rating_scale"] == {"min": 1, "max": 5}
    judgments = [line for line in lines if line["type"] == "judgment"]
    assert len(judgments) == real * 4 == Judgment.collected.filter(source=campaign.source).count()
    names = {pseudonym(campaign, user.pk) for user in people}
    assert {line["annotator"] for line in judgments} == names
    for line in judgments:
        assert re.fullmatch(r"annotator-[0-9a-f]{12}", line["annotator"])
    identities = {user.username for user in people} | {str(user.pk) for user in people}
    for line in lines:
        for key in ("annotator", "category", "user", "user_id", "username"):
            assert line.get(key) not in identities
    assert {line["slug"] for line in lines if line["type"] == "system"} == {s.system.slug for s in submitted}

    bundle = read_bundle("canonical", path)
    # The captions answered, with their images: not the dataset's every caption.
    rated = answered.filter(decoy__isnull=True)
    assert len(bundle.judgments) == len(judgments)
    assert len(bundle.captions) == rated.values("caption_id").distinct().count()
    assert len(bundle.items) == rated.values("caption__item_id").distinct().count()
    imported = dataset_import(bundle=bundle, source_path=str(path), slug="from-campaign", title="From campaign")
    copy = Judgment.objects.filter(caption__item__dataset=imported.dataset)
    assert copy.count() == len(judgments)
    assert set(copy.values_list("annotator", flat=True)) == names

    # the page serves the same lines to anyone who may read the dataset's judgments, once the campaign
    # is closed: while open, only its organisers (blind annotation: they name each caption's image and system)
    url = f"/campaigns/{campaign.slug}/export.jsonl"
    assert Client().get(url).status_code == 404
    organiser = Client()
    organiser.force_login(campaign.created_by)
    assert b"".join(organiser.get(url).streaming_content).decode() == path.read_text()
    campaign_status_set(campaign=campaign, status=Campaign.Status.CLOSED)
    response = Client().get(url)
    assert response.status_code == 200
    assert b"".join(response.streaming_content).decode() == path.read_text()


def test_an_arenas_export_has_its_comparisons_as_pairs(make_campaign, make_user, tmp_path):
    campaign = make_campaign("arena-export", mode=Campaign.Mode.ARENA, ratings_wanted=2, gold_rate=0)
    people = [make_user(name) for name in ("ann", "ned")]
    in_turns(campaign, people, lambda task, user: "left" if user.username == "ann" else "tie", rounds=5)
    lines, path = written(campaign, tmp_path)
    assert lines[0]["type"] == "dataset"
    assert lines[0]["kind"] == "pairwise"
    pairs = [line for line in lines if line["type"] == "pair"]
    assert len(pairs) == 10
    assert sorted(line["winner"] for line in pairs) == ["a"] * 5 + ["tie"] * 5
    assert {line["category"] for line in pairs} == {pseudonym(campaign, user.pk) for user in people}
    bundle = read_bundle("canonical", path)
    assert len(bundle.pairs) == 10
    imported = dataset_import(bundle=bundle, source_path=str(path), slug="arena-copy", title="Arena copy")
    assert PairJudgment.objects.filter(item__dataset=imported.dataset).count() == 10


def test_an_arena_export_numbers_its_pairs_as_if_hidden_systems_had_never_been(
    make_campaign, make_user, submitted, tmp_path
):
    from catalog.uploads.services import upload_visibility_set
    from submissions.services import SUBMISSIONS
    from tests.platform.factories import submit

    third = submit(make_user("cal"), submitted[0].dataset, "Third")
    systems = [s.system for s in (*submitted, third)]
    campaign = make_campaign("arena-gaps", systems=systems, mode=Campaign.Mode.ARENA, ratings_wanted=3, gold_rate=0)
    in_turns(campaign, [make_user("ann"), make_user("ned")], lambda task, user: "left", rounds=12)
    upload_visibility_set(upload=third, is_public=False, kind=SUBMISSIONS)
    lines, _ = written(campaign, tmp_path)
    pairs = [line for line in lines if line["type"] == "pair"]
    hidden = third.system.slug
    assert pairs and all(hidden not in (line["a"]["system"], line["b"]["system"]) for line in pairs)
    assert [line["id"] for line in pairs] == [str(n) for n in range(1, len(pairs) + 1)]  # no gap tells of them
    assert len(pairs) < 24  # some comparisons showed the hidden system and are gone


def test_a_closed_campaigns_export_leaves_out_a_system_another_open_campaign_rates(make_campaign, make_user, submitted):
    """Blind annotation: the shared system's captions (with their images) are not in a closed
    campaign's export while another campaign that rates them is open; they are once it closes."""
    careful, careless = (s.system for s in submitted)
    done = make_campaign("done", systems=[careful, careless], gold_rate=0)
    in_turns(done, [make_user("ann")], lambda task, user: {d["key"]: 3 for d in done.rubric}, rounds=8)
    campaign_status_set(campaign=done, status=Campaign.Status.CLOSED)
    running = make_campaign("running", systems=[careless], gold_rate=0)

    def systems() -> set[str]:
        lines = [json.loads(line) for line in campaign_export_lines(done)]
        return {line["system"] for line in lines if line["type"] in ("caption", "judgment")}

    assert systems() == {careful.slug}
    shown = b"".join(Client().get(f"/campaigns/{done.slug}/export.jsonl").streaming_content).decode()
    assert careful.slug in shown
    assert careless.slug not in shown  # the page serves anyone the same lines
    campaign_status_set(campaign=running, status=Campaign.Status.CLOSED)
    assert systems() == {careful.slug, careless.slug}
