"""The captioner board as a visitor reads it: sorted by the dataset's headline metric at first,
ranks that always count from the best (in either order, under a search or a filter), columns with
numbers first and grouped, the people column, search and filters that fill no cache, the system
page, and no server detail for anyone but staff. (Few tests, each on one board: a board costs
seconds to build.)"""

import re

import pytest

import tests.platform.scoring.plugins  # noqa: F401  (test_words and friends)
from catalog.models import Judgment
from leaderboards.caching import PREFIX
from leaderboards.captioner import captioner_board
from tests.platform.factories import UserFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_page_memory")]


def names(rows):
    return [row.system.name for row in rows]


def board_url(dataset, query=""):
    return f"/datasets/{dataset.slug}/leaderboard/{query}"


def test_order_ranks_columns_and_the_people_column(client, demo_dataset, board):
    # The headline metric (a dataset setting) ranks the first view.
    demo_dataset.headline_metric = "test_words"
    demo_dataset.save()
    _, rows = captioner_board(demo_dataset)
    assert names(rows)[:4] == ["Long captions", "Broken", "Also short", "Short captions"]
    assert [row.rank for row in rows[:4]] == [1, 2, 3, 3]
    page = client.get(board_url(demo_dataset)).content.decode()
    assert re.search(r'<td class="num board-rank">1</td><th scope="row" class="system"><a [^>]*>Long captions', page)
    assert page.count('aria-sort="descending"') == 1
    assert 'aria-sort="ascending"' not in page

    # The worst first: ranks still count from the best, and the header says which way values run.
    _, rows = captioner_board(demo_dataset, sort="test_words", descending=False)
    assert names(rows)[:4] == ["Also short", "Short captions", "Broken", "Long captions"]
    assert [row.rank for row in rows[:4]] == [3, 3, 2, 1]
    page = client.get(board_url(demo_dataset, "?sort=test_words&order=asc")).content.decode()
    header = re.search(r'aria-sort="(\w+)"[^>]*>\s*<a href="([^"]+)" data-metric="test_words"', page)
    assert header.group(1) == "ascending"
    assert "order" not in header.group(2)  # clicked again: best first
    assert "listed worst first" in page

    # Columns with numbers first, grouped by family; those without behind a switch.
    head = page[page.index("<thead>") : page.index("</thead>")]
    families = re.findall(r'<th scope="colgroup" colspan="\d+" class="family([^"]*)">([^<]+)</th>', head)
    assert ("", "Word overlap (n-grams, METEOR)") in families
    assert ("", "Test") in families  # ROUGE-L, word count
    assert families[-1] == (" empty-metric", "without numbers here")
    assert re.search(r'class="num empty-metric"[^>]*>\s*<a href="[^"]*" data-metric="test_broken"', head)
    assert 'id="show-empty"' in page
    # Sorted by a column without numbers: that column is shown, not hidden behind the switch.
    head = client.get(board_url(demo_dataset, "?sort=test_broken")).content.decode()
    assert not re.search(r'class="num empty-metric"[^>]*>\s*<a href="[^"]*" data-metric="test_broken"', head)

    # Without a headline number, the first column with one.
    demo_dataset.headline_metric = "no_such_metric"
    demo_dataset.save()
    _, rows = captioner_board(demo_dataset)
    assert rows[0].rank == 1
    assert rows[-1].rank is None

    # The people column: the mean human rating of a system's captions, with its interval.
    human = next(row for row in rows if row.system.kind == "human")
    ratings = list(
        Judgment.objects.filter(caption__system_id=human.system.id, dimension="overall").values_list("value", flat=True)
    )
    assert human.people.value == pytest.approx(sum(ratings) / len(ratings))
    assert human.people.low < human.people.value < human.people.high
    assert all(row.people is None for row in rows if row.system.kind == "submission")
    data = client.get(board_url(demo_dataset, "?download=json")).json()
    assert data["people_dimension"] == "overall"
    shown = next(s for s in data["systems"] if s["kind"] == "human")["people"]["value"]
    assert shown == pytest.approx(human.people.value)
    _, by_people = captioner_board(demo_dataset, sort="people")
    assert by_people[0].system.kind == "human"
    assert by_people[0].rank == 1
    assert by_people[1].rank is None


def test_search_and_filters_keep_the_whole_boards_ranks_and_fill_no_cache(client, demo_dataset, board, kept_keys):
    _, rows = captioner_board(demo_dataset, sort="test_words", search="SHORT")
    assert names(rows) == ["Also short", "Short captions"]
    assert [row.rank for row in rows] == [3, 3]
    _, rows = captioner_board(demo_dataset, sort="test_words", only="paper")
    assert names(rows) == ["Long captions"]
    assert rows[0].rank == 1
    board["tie"].system.is_baseline = True
    board["tie"].system.save()  # (the board follows an edited system)
    _, rows = captioner_board(demo_dataset, sort="test_words", only="baseline")
    assert names(rows) == ["Also short"]
    assert rows[0].rank == 3
    assert "No system matches this filter." in client.get(board_url(demo_dataset, "?q=zzz")).content.decode()
    # A search is anything a visitor types: answered with a validator of its own, never kept.
    kept = kept_keys(PREFIX)
    first = client.get(board_url(demo_dataset, "?q=Short"))
    again = client.get(board_url(demo_dataset, "?q=Short"), HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304
    other = client.get(board_url(demo_dataset, "?q=SHORT"))
    assert other["ETag"] != first["ETag"]
    assert 'value="SHORT"' in other.content.decode()
    for text in ("a1", "a2", "a3"):
        client.get(board_url(demo_dataset, f"?q={text}"))
        client.get(f"/api/v1/leaderboards/{demo_dataset.slug}/?q={text}")
    assert kept_keys(PREFIX) == kept


def test_the_server_s_detail_is_for_staff_and_each_system_has_a_page(client, demo_dataset, board):
    page = client.get(board_url(demo_dataset)).content.decode()
    assert "boom" not in page
    assert 'title="could not be scored"' in page
    data = client.get(board_url(demo_dataset, "?download=json")).json()
    broken = next(s for s in data["systems"] if s["name"] == "Broken")
    assert broken["scores"]["test_broken"] == {
        "value": None,
        "low": None,
        "high": None,
        "points": None,
        "low_points": None,
        "high_points": None,
        "state": "failed",
    }  # fmt: skip  (the note, "boom", is staff's)
    assert "boom" not in client.get(f"/api/v1/leaderboards/{demo_dataset.slug}/").content.decode()

    short = board["short"]
    page = client.get(f"/datasets/{demo_dataset.slug}/systems/{short.system.slug}/")
    row = re.search(r'<tr data-metric="test_words">.*?</tr>', page.content.decode(), re.S).group(0)
    assert page.status_code == 200
    assert "200.0" in row
    assert "3 of 4" in row
    assert "submitted by owner" in page.content.decode()
    assert f"/submissions/{short.pk}/" in page.content.decode()
    hidden = board["hidden"].system.slug
    assert client.get(f"/datasets/{demo_dataset.slug}/systems/{hidden}/").status_code == 404
    assert client.get(f"/datasets/{demo_dataset.slug}/systems/no-such/").status_code == 404
    client.force_login(board["owner"])
    assert client.get(f"/datasets/{demo_dataset.slug}/systems/{hidden}/").status_code == 200

    client.force_login(UserFactory(username="staffer", is_staff=True))
    assert 'title="boom"' in client.get(board_url(demo_dataset)).content.decode()
    staff_json = client.get(board_url(demo_dataset, "?download=json")).json()
    broken = next(s for s in staff_json["systems"] if s["name"] == "Broken")
    assert broken["scores"]["test_broken"]["note"] == "boom"


def test_a_system_page_lists_its_numbers_before_the_metrics_without_one(client, demo_dataset, board):
    page = client.get(f"/datasets/{demo_dataset.slug}/systems/{board['broken'].system.slug}/").content.decode()
    rows = re.findall(r'<tr data-metric="([\w-]+)">(.*?)</tr>', page, re.S)
    valued = ['colspan="3"' not in row for _, row in rows]
    assert valued[0] and not valued[-1] and valued == sorted(valued, reverse=True), [slug for slug, _ in rows]
