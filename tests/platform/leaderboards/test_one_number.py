"""One number everywhere: several public systems scored by every metric this machine computes (and
the dataset's own caption source with its people column), read side by side on every surface that
shows a system's number — the board's page, its JSON and CSV downloads, the board API in JSON and
CSV, each system's page, each submission's results card (page and API), the compare page and its
API, a citable snapshot (JSON and page) and the `capbench board` command against a live server —
for the whole board and one subset of its images. Any difference beyond display rounding, a number
without its interval, or a 0–1 value where points are shown fails."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from html import unescape

import pytest
from django.contrib.auth import get_user_model

from capbench_client import cli
from catalog.models import Dataset, Item
from leaderboards.citable import snapshot_freeze
from scoring.models import EvaluationJob
from scoring.services.planning import dataset_plan
from submissions.models import Submission
from submissions.services import MethodInfo, submission_create, submission_plan
from tests.platform.scoring.inline import run_jobs

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.usefixtures("live_server_connections_closed", "fresh_page_memory"),
]

# Every metric this machine computes: corpus (BLEU, METEOR) and mean metrics.
METRICS = ["bleu_1", "bleu_2", "bleu_3", "bleu_4", "meteor", "rouge_l", "cider_d"]
SUBSET = "in-domain"
ONE_DECIMAL = 0.05 + 1e-9  # a page's rounding of points
FOUR_DECIMALS = 0.00005 + 1e-9  # the CSV's


def _captions(items: list[Item], kind: str) -> list[dict]:
    if kind == "prefix":  # each image's own first reference, cut short
        return [{"image_id": i.external_id, "caption": " ".join(i.references[0].split()[:6])} for i in items]
    if kind == "neighbour":  # another image's reference: fluent, mostly wrong
        return [{"image_id": i.external_id, "caption": items[n - 1].references[1]} for n, i in enumerate(items)]
    # A reference reworded: close to its references, but none of them.
    return [
        {"image_id": i.external_id, "caption": " ".join(i.references[2].split()[:-1]) + " in a photo"} for i in items
    ]


@pytest.fixture
def scored(demo_dataset, settings):
    """Three public submissions of two owners on the demo, every metric run to the end in this
    process, the dataset's own caption source too (its people column), half the images a subset."""
    settings.CAPBENCH_SUBMISSIONS_CONCURRENT = 10
    items = list(Item.objects.filter(dataset=demo_dataset).order_by("id"))
    for position, item in enumerate(items):  # nocaps-style domains: the first half in, the rest out
        item.metadata = {**item.metadata, "domain": SUBSET if position < len(items) // 2 else "out-domain"}
    Item.objects.bulk_update(items, ["metadata"])
    # New content, as an import of the images with their domains would make: a new fingerprint (what
    # is kept per process of a dataset's subsets is kept under it: catalog.selectors.item_subsets).
    Dataset.objects.filter(pk=demo_dataset.pk).update(content_sha256=hashlib.sha256(b"demo, domains").hexdigest())
    demo_dataset.refresh_from_db()
    users = get_user_model().objects
    owners = [users.create_user("ada"), users.create_user("bob")]
    submissions = {}
    for kind, owner in (("prefix", owners[0]), ("neighbour", owners[1]), ("reworded", owners[0])):
        submission = submission_create(
            owner=owner,
            dataset=demo_dataset,
            file_name=f"{kind}.json",
            content=json.dumps(_captions(items, kind)).encode(),
            method=MethodInfo(f"{kind.capitalize()} captioner"),
            metrics=METRICS,
            is_public=True,
        )
        submission_plan(submission_id=submission.pk)
        submissions[kind] = submission
    dataset_plan(dataset=demo_dataset, slugs=METRICS)
    run_jobs(EvaluationJob.objects.all())
    assert not EvaluationJob.objects.exclude(status="done").exists()
    staff = users.create_user("curator", is_staff=True)
    snapshot = snapshot_freeze(dataset=demo_dataset, by=staff.username)
    return {kind: Submission.objects.get(pk=s.pk) for kind, s in submissions.items()}, snapshot


Numbers = dict[tuple[str, str], tuple[float, float | None, float | None]]  # (system, metric) -> points


def _truth(board: dict) -> Numbers:
    """The API board's numbers in points, checked against its native values on the way."""
    scale = {metric["slug"]: metric["points"] for metric in board["metrics"]}
    found: Numbers = {}
    for system in board["systems"]:
        for slug in METRICS:
            cell = system["scores"][slug]
            assert cell["state"] == "value", (system["system"], slug)
            for native, shown in (("value", "points"), ("low", "low_points"), ("high", "high_points")):
                assert cell[shown] == pytest.approx(cell[native] * scale[slug], rel=1e-9), (system["system"], slug)
            assert cell["low"] is not None and cell["low"] <= cell["value"] <= cell["high"], (system["system"], slug)
            found[(system["system"], slug)] = (cell["points"], cell["low_points"], cell["high_points"])
        if "people" in system:
            cell = system["people"]
            found[(system["system"], "people")] = (cell["points"], cell["low_points"], cell["high_points"])
    return found


def _same(surface: str, seen: Numbers, truth: Numbers, tolerance: float, *, keys=None) -> None:
    """Every number `surface` shows equals the board's within its rounding, with its interval."""
    keys = keys if keys is not None else [key for key in truth if key[1] != "people"]
    assert keys, surface
    for key in keys:
        assert key in seen, f"{surface}: no number for {key}"
        shown, expected = seen[key], truth[key]
        assert shown[1] is not None and shown[2] is not None, f"{surface}: {key} has no interval"
        for part, (a, b) in zip(("value", "low", "high"), zip(shown, expected, strict=True), strict=True):
            assert abs(a - b) <= tolerance, f"{surface}: {key} {part} {a} is not the board's {b}"


def _number(text: str) -> float:
    return float(unescape(text).replace("−", "-").strip())


def _interval(text: str) -> tuple[float, float]:
    low, high = re.fullmatch(r"\s*(-?[\d.]+)\s*(?:–|to)\s*(-?[\d.]+)\s*", unescape(text).replace("−", "-")).groups()
    return float(low), float(high)


def _board_page(html: str) -> Numbers:
    found: Numbers = {}
    for row in re.findall(r"<tr><td class=\"num board-rank\">.*?</tr>", html, re.S):
        system = re.search(r'/systems/([\w-]+)/"', row).group(1)
        for slug, value, low, high in re.findall(
            r'<td class="num state-value" data-metric="([\w-]+)">([^<]+)<small class="interval">([^–<]+)–([^<]+)</small>',
            row,
        ):
            found[(system, slug)] = (_number(value), _number(low), _number(high))
    return found


def _csv(text: str) -> Numbers:
    found: Numbers = {}
    for row in csv.DictReader(io.StringIO(text)):
        for slug in METRICS:
            found[(row["system"], slug)] = (float(row[slug]), float(row[f"{slug}_low"]), float(row[f"{slug}_high"]))
        people = next(
            (name for name in row if name.startswith("people_") and not name.endswith(("_low", "_high"))), None
        )
        if people and row[people]:
            found[(row["system"], "people")] = (
                float(row[people]),
                float(row[f"{people}_low"]),
                float(row[f"{people}_high"]),
            )
    return found


def _json_board(board: dict) -> Numbers:
    found: Numbers = {}
    for system in board["systems"]:
        for slug, cell in system["scores"].items():
            if cell.get("points") is not None:
                found[(system["system"], slug)] = (cell["points"], cell["low_points"], cell["high_points"])
        if system.get("people"):
            cell = system["people"]
            found[(system["system"], "people")] = (cell["points"], cell["low_points"], cell["high_points"])
    return found


def _metric_rows(html: str) -> list[tuple[str, str]]:
    """Each table row of a metric (`<tr data-metric=…>`): its slug and its cells."""
    return re.findall(r'<tr data-metric="([\w-]+)">(.*?)</tr>', html, re.S)


def _rows_by_metric(html: str, system: str, value_cell: str) -> Numbers:
    """A system page's or results card's table: a row per metric, its value then its interval."""
    found: Numbers = {}
    for slug, row in _metric_rows(html):
        matched = re.search(rf'<td class="{value_cell}">([^<]+)</td>\s*<td class="num">([^<]+)</td>', row)
        if matched:
            found[(system, slug)] = (_number(matched.group(1)), *_interval(matched.group(2)))
    return found


def _card_api(card: dict, system: str) -> Numbers:
    found = {}
    for line in card["results"]:
        assert line["value"] is not None and line["low"] is not None, line
        assert line["points"] == pytest.approx(line["value"] * 100, rel=1e-9)  # every metric here is 0–1 or 0–10
        found[(system, line["metric"])] = (line["points"], line["low_points"], line["high_points"])
        best = line["best"]
        if best is not None:  # the best other system's number: the board's too
            found[(best["system"], line["metric"])] = (best["points"], best["low_points"], best["high_points"])
    return found


def _compare_page(html: str, a: str, b: str) -> Numbers:
    found: Numbers = {}
    pattern = (
        r'<td class="num board-number">([^<]+)<small class="interval">([^–<]+)–([^<]+)</small></td>\s*'
        r'<td class="num board-number">([^<]+)<small class="interval">([^–<]+)–([^<]+)</small></td>\s*'
        r'<td class="num">([^<]+)</td>'
    )
    for slug, row in _metric_rows(html):
        matched = re.search(pattern, row)
        if matched is None:
            continue
        *numbers, difference = matched.groups()
        values = [_number(n) for n in numbers]
        found[(a, slug)], found[(b, slug)] = tuple(values[:3]), tuple(values[3:])
        # The difference shown is A − B of the numbers shown (every image captioned by both).
        assert abs(_number(difference) - (values[0] - values[3])) <= 3 * ONE_DECIMAL, (slug, difference)
    return found


def _compare_api(data: dict) -> Numbers:
    found: Numbers = {}
    for line in data["metrics"]:
        if line["metric"] not in METRICS:  # (the metrics this machine cannot compute: no number, a reason)
            assert line["difference"] is None and line["reason"]
            continue
        for side in ("a", "b"):
            number = line[side]
            found[(data[side], line["metric"])] = (number["points"], number["low_points"], number["high_points"])
        difference = line["difference"]
        assert difference["images"] == data["images"]
        assert difference["points"] == pytest.approx(line["a"]["points"] - line["b"]["points"], abs=1e-9)
        assert difference["low_points"] <= difference["points"] <= difference["high_points"]
    return found


def _snapshot_page(html: str) -> Numbers:
    found: Numbers = {}
    for system, row in re.findall(r'<tr data-system="([\w-]*)">(.*?)</tr>', html, re.S):
        for slug, value, low, high in re.findall(
            r'<td class="num" data-metric="([\w-]+)">([^<]+)<br><small>([^–<]+)–([^<]+)</small></td>', row
        ):
            found[(system, slug)] = (_number(value), _number(low), _number(high))
    return found


def _cli_board(text: str, names: dict[str, str], slug: str) -> Numbers:
    """`capbench board --sort SLUG`: the sorted metric is its first number column, "8.8 (7.2–10.6)"."""
    found: Numbers = {}
    for line in text.splitlines():
        matched = re.match(r"\s*\d+\s+(.+?)\s{2,}(-?[\d.]+) \((-?[\d.]+)–(-?[\d.]+)\)", line)
        if matched:
            name, *numbers = matched.groups()
            found[(names[name.removesuffix(" (baseline)")], slug)] = tuple(float(n) for n in numbers)
    return found


@pytest.mark.slow
def test_every_surface_shows_the_boards_number_with_its_interval(
    client, live_server, scored, capsys, monkeypatch, tmp_path
):
    submissions, snapshot = scored
    slug = "demo"
    board = client.get(f"/api/v1/leaderboards/{slug}/").json()
    truth = _truth(board)
    systems = [s["system"] for s in board["systems"]]
    names = {s["name"]: s["system"] for s in board["systems"]}
    assert len(systems) == 4
    assert any(key[1] == "people" for key in truth)  # three submissions, the caption source
    base = f"/datasets/{slug}/leaderboard/"

    people = [key for key in truth if key[1] == "people"]  # the caption source's mean rating
    page = client.get(base).content.decode()
    _same("board page", _board_page(page), truth, ONE_DECIMAL)
    _same("board page people", _board_page(page), truth, ONE_DECIMAL, keys=people)
    _same("board JSON download", _json_board(client.get(base + "?download=json").json()), truth, 1e-9)
    _same("board CSV download", _csv(client.get(base + "?download=csv").content.decode()), truth, FOUR_DECIMALS)
    api_csv = client.get(f"/api/v1/leaderboards/{slug}/?format=csv").content.decode()
    _same("board API CSV", _csv(api_csv), truth, FOUR_DECIMALS)
    _same("board CSV people", _csv(api_csv), truth, FOUR_DECIMALS, keys=people)
    _same("board JSON people", _json_board(client.get(base + "?download=json").json()), truth, 1e-9, keys=people)
    for system in systems:
        page = client.get(f"/datasets/{slug}/systems/{system}/").content.decode()
        mine = [key for key in truth if key[0] == system]  # its people number too, where it has one
        _same(f"system page of {system}", _rows_by_metric(page, system, "num"), truth, ONE_DECIMAL, keys=mine)
    for submission in submissions.values():
        system = submission.system.slug
        mine = [key for key in truth if key[0] == system]
        client.force_login(submission.owner)
        card = client.get(f"/submissions/{submission.pk}/").content.decode()
        _same(f"results card of {system}", _rows_by_metric(card, system, "num value"), truth, ONE_DECIMAL, keys=mine)
        card_api = _card_api(client.get(f"/api/v1/submissions/{submission.pk}/results/").json(), system)
        _same(f"results API of {system}", card_api, truth, 1e-9, keys=list(card_api))
        client.logout()
    for a, b in ((systems[0], systems[1]), (systems[1], systems[2]), (systems[3], systems[0])):
        pair = [key for key in truth if key[0] in (a, b) and key[1] != "people"]
        page = client.get(f"/datasets/{slug}/compare/?a={a}&b={b}").content.decode()
        _same(f"compare page {a}/{b}", _compare_page(page, a, b), truth, ONE_DECIMAL, keys=pair)
        api = client.get(f"/api/v1/leaderboards/{slug}/compare/?a={a}&b={b}").json()
        _same(f"compare API {a}/{b}", _compare_api(api), truth, 1e-9, keys=pair)
    frozen = client.get(f"{base}snapshots/{snapshot.number}.json").json()
    _same("snapshot JSON", _json_board(frozen["board_json"]), truth, 1e-9)
    _same("snapshot JSON people", _json_board(frozen["board_json"]), truth, 1e-9, keys=people)
    assert frozen["board_json"]["people_column"]["kind"] == "judgments"  # which ratings it froze
    frozen_page = _snapshot_page(client.get(f"{base}snapshots/{snapshot.number}/").content.decode())
    _same("snapshot page", frozen_page, truth, ONE_DECIMAL)
    _same("snapshot page people", frozen_page, truth, ONE_DECIMAL, keys=people)

    # The capbench command against the live server, a column at a time (the sorted one comes first).
    monkeypatch.setenv("CAPBENCH_CONFIG_DIR", str(tmp_path))
    for metric in METRICS:
        capsys.readouterr()
        assert cli.main(["--url", live_server.url, "board", slug, "--sort", metric]) == 0
        out = capsys.readouterr().out
        assert f"ranked by {next(m['name'] for m in board['metrics'] if m['slug'] == metric)}" in out.splitlines()[0]
        shown = _cli_board(out, names, metric)
        _same(f"capbench board --sort {metric}", shown, truth, ONE_DECIMAL, keys=[k for k in truth if k[1] == metric])

    # One subset of the images: every number formed again over it, the same on each surface.
    subset = client.get(f"/api/v1/leaderboards/{slug}/?domain={SUBSET}").json()
    assert subset["domain"] == SUBSET
    in_subset = _truth(subset)
    same = [key for key in in_subset if key[1] != "people" and in_subset[key] == truth[key]]
    assert not same, [(key, in_subset[key], truth[key]) for key in same]  # over fewer images
    page = client.get(f"{base}?domain={SUBSET}").content.decode()
    _same("subset page", _board_page(page), in_subset, ONE_DECIMAL)
    _same(
        "subset CSV",
        _csv(client.get(f"{base}?domain={SUBSET}&download=csv").content.decode()),
        in_subset,
        FOUR_DECIMALS,
    )
    for metric in METRICS[:2]:
        capsys.readouterr()
        assert cli.main(["--url", live_server.url, "board", slug, "--sort", metric, "--domain", SUBSET]) == 0
        shown = _cli_board(capsys.readouterr().out, names, metric)
        _same(
            f"capbench board --domain {SUBSET}",
            shown,
            in_subset,
            ONE_DECIMAL,
            keys=[k for k in in_subset if k[1] == metric],
        )
