"""The captioner board as a visitor reads it: sorted by the dataset's headline metric at first,
ranks that always count from the best, columns with numbers first and grouped, the people column,
search and filters, the system page, and no server detail for anyone but staff."""

import re

import pytest
from django.contrib.auth import get_user_model

from catalog.models import Judgment
from leaderboards.selectors import captioner_board
from tests.platform.leaderboards.test_boards import board, submit  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def names(rows):
    return [row.system.name for row in rows]


def board_url(dataset, query=""):
    return f"/datasets/{dataset.slug}/leaderboard/{query}"


def test_the_first_view_is_sorted_by_the_headline_metric_and_ranked(client, demo_dataset, board):  # noqa: F811
    demo_dataset.headline_metric = "test_words"
    demo_dataset.save()
    _, rows = captioner_board(demo_dataset)
    assert names(rows)[:4] == ["Long captions", "Broken", "Also short", "Short captions"]
    assert [row.rank for row in rows[:4]] == [1, 2, 3, 3]
    page = client.get(board_url(demo_dataset)).content.decode()
    assert re.search(r'<td class="num board-rank">1</td><th scope="row" class="system"><a [^>]*>Long captions', page)
    assert 'aria-sort="descending"' in page and page.count('aria-sort="descending"') == 1
    # Without a headline number the first column with one is used (ROUGE-L here is scored on two).
    demo_dataset.headline_metric = "no_such_metric"
    demo_dataset.save()
    _, rows = captioner_board(demo_dataset)
    assert rows[0].rank == 1 and rows[-1].rank is None


def test_listing_the_worst_first_keeps_ranks_counted_from_the_best(client, demo_dataset, board):  # noqa: F811
    _, rows = captioner_board(demo_dataset, sort="test_words", descending=False)
    assert names(rows)[:4] == ["Also short", "Short captions", "Broken", "Long captions"]
    assert [row.rank for row in rows[:4]] == [3, 3, 2, 1]
    page = client.get(board_url(demo_dataset, "?sort=test_words&order=asc")).content.decode()
    header = re.search(
        r'<th scope="col" class="num" aria-sort="(\w+)"[^>]*>\s*<a href="([^"]+)" data-metric="test_words"', page
    )
    assert header.group(1) == "ascending"  # the values grow down the table
    assert "order" not in header.group(2)  # clicking again goes back to best first
    assert "listed worst first" in page


def test_columns_with_numbers_come_first_grouped_by_family_and_the_rest_behind_a_switch(
    client,
    demo_dataset,
    board,  # noqa: F811
):
    page = client.get(board_url(demo_dataset)).content.decode()
    head = page[page.index("<thead>") : page.index("</thead>")]
    families = re.findall(r'<th scope="colgroup" colspan="(\d+)" class="family([^"]*)">([^<]+)</th>', head)
    assert families[0][2] == "ngram" and families[0][1] == ""  # ROUGE-L has numbers
    assert ("test", "") in [(f[2], f[1]) for f in families]  # test_words, test_broken has none: collapsed
    assert families[-1][1] == " empty-metric" and families[-1][2] == "without numbers here"
    assert re.search(r'class="num empty-metric"[^>]*>\s*<a href="[^"]*" data-metric="test_broken"', head)
    assert 'id="show-empty"' in page


def test_search_and_filters_keep_only_the_matching_systems(client, demo_dataset, board):  # noqa: F811
    _, rows = captioner_board(demo_dataset, search="SHORT")
    assert sorted(names(rows)) == ["Also short", "Short captions"]
    _, rows = captioner_board(demo_dataset, only="paper")
    assert names(rows) == ["Long captions"]
    board["tie"].system.is_baseline = True
    board["tie"].system.save()
    assert names(captioner_board(demo_dataset, only="baseline")[1]) == ["Also short"]
    page = client.get(board_url(demo_dataset, "?q=zzz-nothing")).content.decode()
    assert "No system matches this filter." in page
    plain, searched = client.get(board_url(demo_dataset)), client.get(board_url(demo_dataset, "?q=short"))
    assert plain["ETag"] != searched["ETag"]
    assert client.get(board_url(demo_dataset, "?q=SHORT"))["ETag"] == searched["ETag"]


def test_the_people_column_shows_the_mean_human_rating_with_its_interval(client, demo_dataset, board):  # noqa: F811
    _, rows = captioner_board(demo_dataset)
    human = next(row for row in rows if row.system.kind == "human")
    ratings = list(
        Judgment.objects.filter(caption__system_id=human.system.id, dimension="overall").values_list("value", flat=True)
    )
    assert human.people.value == pytest.approx(sum(ratings) / len(ratings))
    assert human.people.low < human.people.value < human.people.high
    assert all(row.people is None for row in rows if row.system.kind == "submission")
    data = client.get(board_url(demo_dataset, "?download=json")).json()
    assert data["people_dimension"] == "overall"
    assert next(s for s in data["systems"] if s["kind"] == "human")["people"]["value"] == pytest.approx(
        human.people.value
    )
    _, by_people = captioner_board(demo_dataset, sort="people")
    assert by_people[0].system.kind == "human" and by_people[0].rank == 1 and by_people[1].rank is None


def test_job_errors_are_shown_to_staff_only(client, demo_dataset, board):  # noqa: F811
    page = client.get(board_url(demo_dataset)).content.decode()
    assert "boom" not in page and 'title="could not be scored"' in page
    data = client.get(board_url(demo_dataset, "?download=json")).json()
    broken = next(s for s in data["systems"] if s["name"] == "Broken")
    assert broken["scores"]["test_broken"] == {"value": None, "state": "failed"}
    assert "boom" not in client.get(f"/api/v1/datasets/{demo_dataset.slug}/leaderboard/").content.decode()
    client.force_login(get_user_model().objects.create_user("staffer", is_staff=True))
    assert 'title="boom"' in client.get(board_url(demo_dataset)).content.decode()
    assert client.get(board_url(demo_dataset, "?download=json")).json()["systems"][0]["scores"] is not None


def test_a_system_page_shows_every_number_with_its_rank(client, demo_dataset, board):  # noqa: F811
    short = board["short"]
    page = client.get(f"/datasets/{demo_dataset.slug}/systems/{short.system.slug}/")
    assert page.status_code == 200
    text = page.content.decode()
    row = re.search(r'<tr data-metric="test_words">.*?</tr>', text, re.S).group(0)
    assert "200.0" in row and "3 of 4" in row
    assert "submitted by owner" in text and f"/submissions/{short.pk}/" in text
    hidden = board["hidden"].system.slug
    assert client.get(f"/datasets/{demo_dataset.slug}/systems/{hidden}/").status_code == 404
    assert client.get(f"/datasets/{demo_dataset.slug}/systems/no-such/").status_code == 404
    client.force_login(board["owner"])
    assert client.get(f"/datasets/{demo_dataset.slug}/systems/{hidden}/").status_code == 200
