"""Integrity checks of a captioner submission: the rules over captions and references (copied word
for word or once normalised, near-empty, constant; below a threshold nothing), and a system that
submits the lower-cased references flagged end to end, from the upload form to its results card,
the board page, the board API and its system page."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from catalog.models import Item
from submissions.integrity import (
    CONSTANT,
    COPIES_REFERENCES,
    NEAR_EMPTY,
    caption_flags,
    flags_shown,
    normalised,
)
from submissions.models import Submission

REFERENCES = ["A dog runs across the grass.", "Two dogs play outside"]


def checked(captions: list[str], *, copy_share=0.2, short_share=0.2) -> dict[str, dict]:
    """The flags of captions that are each of an image with REFERENCES, by flag."""
    found = caption_flags([(c, REFERENCES) for c in captions], copy_share=copy_share, short_share=short_share)
    return {flag["flag"]: flag for flag in found}


def distinct(count: int) -> list[str]:
    return [f"a picture with {n} different things in it" for n in range(count)]


def test_normalised_lower_cases_drops_punctuation_and_extra_spaces():
    assert normalised("  A  dog,\trUns across the GRASS!! ") == "a dog runs across the grass"
    assert normalised("it's a dog_park") == "its a dogpark"


def test_exact_copies_over_the_threshold_are_flagged():
    flags = checked([REFERENCES[0]] * 1 + [REFERENCES[1]] + distinct(8))  # 2 of 10: 20%
    assert flags[COPIES_REFERENCES] == {"flag": COPIES_REFERENCES, "share": 0.2, "threshold": 0.2, "exact": 0.2}


def test_normalised_copies_are_flagged_and_told_apart_from_exact_ones():
    flags = checked(["a dog runs across the grass", "TWO DOGS, PLAY OUTSIDE!", REFERENCES[0]] + distinct(7))
    assert flags[COPIES_REFERENCES]["share"] == 0.3
    assert flags[COPIES_REFERENCES]["exact"] == 0.1
    shown = flags_shown(list(flags.values()), references_shown=True)[0]
    assert shown.label == "copies references"
    assert shown.words.startswith("30% of its captions are a reference caption of their image (10% word for word")


def test_copies_below_the_threshold_are_not_flagged():
    assert checked(["a dog runs across the grass"] + distinct(9)) == {}  # 10%, under 20%
    assert COPIES_REFERENCES not in checked(["a dog runs across the grass"] * 1 + distinct(3), copy_share=0.5)
    # a caption that only contains a reference, or a reference of another image, is no copy
    assert checked(["a dog runs across the grass today"] * 1 + distinct(1), copy_share=0.1) == {}


def test_near_empty_captions_are_flagged():
    flags = checked(["dog", "", "  ...  ", "a dog"] + distinct(6))  # 3 of 10 under two words
    assert flags[NEAR_EMPTY]["share"] == 0.3
    assert set(flags) == {NEAR_EMPTY}
    assert NEAR_EMPTY not in checked(["dog"] + distinct(9))  # 10%
    assert "fewer than 2 words" in flags_shown([flags[NEAR_EMPTY]], references_shown=False)[0].words


def test_one_caption_for_most_images_is_flagged_as_constant():
    flags = checked(["A photo of a thing."] * 5 + ["a photo of a thing"] + distinct(4))  # 6 of 10, normalised
    assert flags[CONSTANT]["share"] == 0.6
    assert CONSTANT not in checked(["a photo of a thing"] * 5 + distinct(5))  # half is not over half
    assert checked(["a photo of a thing"]) == {}  # one image alone is not a repetition
    assert caption_flags([], copy_share=0.2, short_share=0.2) == []


def test_the_copy_flag_is_left_out_where_the_references_are_hidden():
    flags = caption_flags([(REFERENCES[0], REFERENCES)] * 3, copy_share=0.2, short_share=0.2)
    assert {f.flag for f in flags_shown(flags, references_shown=True)} == {COPIES_REFERENCES, CONSTANT}
    assert {f.flag for f in flags_shown(flags, references_shown=False)} == {CONSTANT}


@pytest.mark.django_db(transaction=True)
def test_a_system_submitting_the_lower_cased_references_is_flagged_everywhere(
    fresh_page_memory, client, demo_dataset, captioner
):
    entries = [
        {"image_id": item.external_id, "caption": item.references[0].lower()}
        for item in Item.objects.filter(dataset=demo_dataset)
    ]
    client.force_login(captioner)
    response = client.post(
        "/submit/",
        {
            "dataset": demo_dataset.slug,
            "method_name": "Reference parrot",
            "is_public": "on",
            "results": SimpleUploadedFile("results.json", json.dumps(entries).encode(), "application/json"),
        },
    )
    submission = Submission.objects.get()
    assert response.status_code == 302
    assert response.url == f"/submissions/{submission.pk}/"  # flagged, not refused
    assert [flag["flag"] for flag in submission.flags] == [COPIES_REFERENCES]
    assert submission.flags[0]["share"] == 1.0

    card = client.get(response.url).content.decode()
    assert 'id="integrity-flags"' in card
    assert f'data-flag="{COPIES_REFERENCES}"' in card
    assert "100% of its captions are a reference caption of their image" in card
    results = client.get(f"/api/v1/submissions/{submission.pk}/results/").json()
    assert [flag["flag"] for flag in results["flags"]] == [COPIES_REFERENCES]

    client.logout()  # as anyone sees it
    board = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/").content.decode()
    row = next(line for line in board.splitlines() if "Reference parrot" in line)
    assert 'class="badge flagged"' in row
    assert "⚑ copies references" in row
    assert "Flagged by the integrity checks at upload" in row
    assert 'id="flags-note"' in board
    api = client.get(f"/api/v1/leaderboards/{demo_dataset.slug}/").json()
    system = next(s for s in api["systems"] if s["name"] == "Reference parrot")
    assert [flag["flag"] for flag in system["flags"]] == [COPIES_REFERENCES]
    assert system["flags"][0]["share"] == 1.0
    assert system["flags"][0]["threshold"] == 0.2
    page = client.get(f"/datasets/{demo_dataset.slug}/systems/{submission.system.slug}/").content.decode()
    assert f'data-flag="{COPIES_REFERENCES}"' in page


@pytest.mark.django_db(transaction=True)
def test_own_words_are_not_flagged(client, demo_dataset, captioner):
    entries = [
        {"image_id": item.external_id, "caption": f"a photograph of scene number {item.pk} outdoors"}
        for item in Item.objects.filter(dataset=demo_dataset)
    ]
    client.force_login(captioner)
    client.post(
        "/submit/",
        {
            "dataset": demo_dataset.slug,
            "method_name": "Honest captioner",
            "results": SimpleUploadedFile("results.json", json.dumps(entries).encode(), "application/json"),
        },
    )
    submission = Submission.objects.get()
    assert submission.flags == []
    assert 'id="integrity-flags"' not in client.get(f"/submissions/{submission.pk}/").content.decode()
    assert client.get(f"/api/v1/submissions/{submission.pk}/results/").json()["flags"] == []


@pytest.mark.django_db
def test_submissions_made_before_the_checks_are_checked_by_the_migration(demo_dataset, captioner):
    from importlib import import_module

    from django.apps import apps

    from submissions.services import MethodInfo, submission_create

    entries = [
        {"image_id": item.external_id, "caption": item.references[0]}
        for item in Item.objects.filter(dataset=demo_dataset)
    ]
    submission = submission_create(
        owner=captioner,
        dataset=demo_dataset,
        file_name="r.json",
        content=json.dumps(entries).encode(),
        method=MethodInfo("Before the checks"),
    )
    Submission.objects.filter(pk=submission.pk).update(flags=[])  # as it was stored before them
    import_module("submissions.migrations.0004_integrity_flags").check_earlier_submissions(apps, None)
    submission.refresh_from_db()
    assert [flag["flag"] for flag in submission.flags] == [COPIES_REFERENCES]
    assert submission.flags[0]["exact"] == 1.0
