"""Two systems compared on the same images: the paired differences, who may be compared, the
per-image explorer, and the limit on how often a client may run one."""

import re

import pytest

import tests.platform.scoring.plugins  # noqa: F401  (test_words and friends)
from catalog.models import Item, Judgment
from leaderboards.comparison import comparison as compared
from leaderboards.comparison import comparison_inputs, explored_images
from scoring.services.planning import dataset_plan
from tests.platform.factories import CaptionFactory, SystemFactory
from tests.platform.scoring.inline import run_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_page_memory")]


def compared_of(dataset, a, b):
    return compared(comparison_inputs(dataset, a, b))


def url(dataset, a, b, **more):
    extra = "".join(f"&{k}={v}" for k, v in more.items())
    return f"/datasets/{dataset.slug}/compare/?a={a.system.slug}&b={b.system.slug}{extra}"


def test_the_paired_difference_the_explorer_and_the_links(client, demo_dataset, board):
    long_one, short_one, tie = board["long"], board["short"], board["tie"]
    found = compared_of(demo_dataset, long_one.system, short_one.system)
    assert found.images == Item.objects.filter(dataset=demo_dataset).count()
    words = next(m for m in found.metrics if m.column.slug == "test_words")
    # Six words against two on every image: no spread, so the interval is the difference itself.
    assert (words.a.value, words.b.value, words.difference.value) == (6.0, 2.0, 4.0)
    assert (words.a.low, words.a.high) == (6.0, 6.0)  # the board's own interval
    assert (words.difference.low, words.difference.high) == (4.0, 4.0)
    assert words.difference.p_value == 0.0
    assert words.better == "a"
    broken = next(m for m in found.metrics if m.column.slug == "test_broken")
    assert broken.difference is None
    assert broken.reason == "not scored for both systems"
    page = client.get(url(demo_dataset, long_one, short_one)).content.decode()
    row = re.search(r'<tr data-metric="test_words">.*?</tr>', page, re.S).group(0)
    assert "600.0" in row
    assert "200.0" in row
    assert "400.0 to 400.0" in row
    assert "&lt; 0.002" in row
    assert "A better" in row
    assert '600.0<small class="interval">600.0–600.0</small>' in row  # each number with its board interval
    assert re.search(r"Not compared, not scored for both systems: [^<]*Test: always raises", page)

    # The explorer: the shared images where the two differ most, with both captions and every score.
    found = compared_of(demo_dataset, long_one.system, tie.system)
    images, ranked, pages = explored_images(found, order="differ", metric="test_words", page=1, per_page=10)
    assert ranked == found.images
    assert pages == -(-ranked // 10)
    assert len(images) == 10
    assert all(image.key == 4.0 for image in images)
    shown = images[0]
    assert [c.text for c in shown.a] == ["word word word word word word"]
    assert {column.slug: (a, b) for column, a, b in shown.scores}["test_words"] == (6.0, 2.0)
    page = client.get(url(demo_dataset, long_one, tie, metric="test_words")).content.decode()
    assert page.count('<article class="explored"') == 20  # a page of the explorer
    assert f'<a href="/datasets/{demo_dataset.slug}/items/{shown.item.pk}/">' in page
    assert "no image with both captions rated" in page  # submitted captions carry no human ratings
    for extra in ("&page=x", "&page=-4", "&page=99999", "&order=sideways", "&metric=nope", "&order=people"):
        assert client.get(url(demo_dataset, long_one, short_one) + extra).status_code == 200, extra

    # The board and a results card link to a comparison.
    board_page = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/").content.decode()
    assert f"/datasets/{demo_dataset.slug}/compare/?a=" in board_page
    client.force_login(board["owner"])
    card = client.get(f"/submissions/{short_one.pk}/").content.decode()
    assert f"compare/?a={short_one.system.slug}&amp;b={long_one.system.slug}" in card


def test_who_may_be_compared_and_how_often(fresh_rate_limits, client, demo_dataset, board, settings):
    hidden, public = board["hidden"], board["long"]
    refused = client.get(url(demo_dataset, public, hidden))
    missing = client.get(f"/datasets/{demo_dataset.slug}/compare/?a={public.system.slug}&b=no-such-system")
    assert refused.status_code == missing.status_code == 400
    assert hidden.system.slug in refused.content.decode()  # (echoing what was asked is no leak)
    assert "Private one" not in refused.content.decode()
    assert "Private one" not in client.get(f"/datasets/{demo_dataset.slug}/compare/").content.decode()
    same = client.get(url(demo_dataset, public, public))
    assert same.status_code == 400
    assert "two different systems" in same.content.decode()

    # Only a comparison not kept from an earlier request runs a bootstrap and counts.
    settings.CAPBENCH_RATES["comparisons"] = "2/hour"
    assert client.get(url(demo_dataset, public, board["short"])).status_code == 200
    for page in range(1, 4):  # paging through the explorer of the same comparison
        assert client.get(url(demo_dataset, public, board["short"], page=page)).status_code == 200
    assert client.get(url(demo_dataset, public, board["tie"])).status_code == 200
    refused = client.get(url(demo_dataset, public, board["broken"]))
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    form = client.get(f"/datasets/{demo_dataset.slug}/compare/")
    assert form.status_code == 200  # the form alone is free
    selected = re.findall(r'<option value="([^"]+)" selected>', form.content.decode())
    assert len(selected) == 2
    assert selected[0] != selected[1]  # it never opens on A = B

    client.force_login(board["owner"])
    settings.CAPBENCH_RATES["comparisons"] = "100/hour"
    mine = client.get(url(demo_dataset, public, hidden))
    assert mine.status_code == 200
    assert "Private one" in mine.content.decode()


def test_the_explorer_finds_where_a_metric_disagrees_with_people(client, demo_dataset):
    """Two caption sources rated by people on the same images: the metric (word count) prefers
    the longer caption; where people rated the shorter one higher, the image is a disagreement."""
    items = list(Item.objects.filter(dataset=demo_dataset).order_by("id")[:6])
    wordy, terse = (SystemFactory(dataset=demo_dataset, slug=slug) for slug in ("wordy", "terse"))
    ratings = {0: (1, 4), 1: (2, 3), 2: (4, 1), 3: (3, 2), 4: (2, 2), 5: (1, 4.5)}  # (wordy, terse) by people
    for index, item in enumerate(items):
        long_caption = CaptionFactory(item=item, system=wordy, text="a b c d e f")
        short_caption = CaptionFactory(item=item, system=terse, text="a b")
        Judgment.objects.create(caption=long_caption, dimension="overall", value=ratings[index][0])
        Judgment.objects.create(caption=short_caption, dimension="overall", value=ratings[index][1])
    dataset_plan(dataset=demo_dataset, slugs=["test_words"])
    from scoring.models import EvaluationJob

    run_jobs(EvaluationJob.objects.filter(dataset=demo_dataset))
    found = compared_of(demo_dataset, wordy, terse)
    assert found.people_dimension == "overall"
    assert found.images == 6
    images, ranked, _ = explored_images(found, order="people", metric="test_words", page=1)
    # Disagreements: images 0, 1 and 5 (people preferred the terse one), widest human gap first.
    assert ranked == 3
    assert [image.item.pk for image in images] == [items[5].pk, items[0].pk, items[1].pk]
    assert images[0].people == (1.0, 4.5)
    page = client.get(f"/datasets/{demo_dataset.slug}/compare/?a=wordy&b=terse&order=people&metric=test_words")
    assert page.status_code == 200
    assert page.content.decode().count('<article class="explored"') == 3


def test_the_compare_api_gives_the_pages_numbers_through_the_visibility_rule(
    fresh_rate_limits, client, demo_dataset, board, settings
):
    long_one, short_one, hidden = board["long"], board["short"], board["hidden"]
    api = f"/api/v1/leaderboards/{demo_dataset.slug}/compare/"
    data = client.get(api, {"a": long_one.system.slug, "b": short_one.system.slug}).json()
    assert (data["a"], data["b"], data["images"]) == (long_one.system.slug, short_one.system.slug, 100)
    words = next(line for line in data["metrics"] if line["metric"] == "test_words")
    assert (words["a"]["value"], words["a"]["points"], words["b"]["points"]) == (6.0, 600.0, 200.0)
    assert (words["a"]["low_points"], words["a"]["high_points"]) == (600.0, 600.0)  # the board's interval
    difference = words["difference"]
    assert (difference["value"], difference["points"], difference["low_points"], difference["high_points"]) == (
        4.0, 400.0, 400.0, 400.0,
    )  # fmt: skip
    assert difference["p"] == 0.0
    assert difference["better"] == "a"
    assert difference["images"] == 100
    broken = next(line for line in data["metrics"] if line["metric"] == "test_broken")
    assert broken["difference"] is None
    assert broken["reason"] == "not scored for both systems"
    # A private system reads as one that does not exist; another dataset as none.
    hidden_answer = client.get(api, {"a": long_one.system.slug, "b": hidden.system.slug})
    missing = client.get(api, {"a": long_one.system.slug, "b": "no-such-system"})
    assert hidden_answer.status_code == missing.status_code == 400
    assert "Private one" not in hidden_answer.content.decode()
    assert "6.0" not in hidden_answer.content.decode()
    assert client.get("/api/v1/leaderboards/no-such/compare/", {"a": "x", "b": "y"}).status_code == 404
    settings.CAPBENCH_RATES["comparisons"] = "2/hour"  # this address has run one bootstrap: one more
    assert client.get(api, {"a": long_one.system.slug, "b": board["tie"].system.slug}).status_code == 200
    assert client.get(api, {"a": long_one.system.slug, "b": board["tie"].system.slug}).status_code == 200  # kept
    limited = client.get(api, {"a": short_one.system.slug, "b": board["broken"].system.slug})
    assert limited.status_code == 429
    assert int(limited["Retry-After"]) > 0
