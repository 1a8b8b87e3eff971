"""The home page says what CapBench is and what is best on it: the top systems of each captioner
benchmark as its board shows them, the top metrics of each meta-evaluation set as the metric board
ranks them, the latest public submissions, then the datasets. What it shows is what anyone may see,
whoever is signed in; server commands are for staff only."""

from __future__ import annotations

import re

import pytest

from catalog.models import Dataset, System
from leaderboards.captioner import captioner_board_page
from leaderboards.home import home_page
from leaderboards.rendering import points
from leaderboards.snapshots import board_refresh
from scoring.models import CorrelationResult, EvaluationJob, Metric, SystemScore
from scoring.services.metrics import metrics_sync
from submissions.models import Submission
from tests.platform.factories import DatasetFactory, SubmissionFactory, SystemFactory, UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_page_memory")]

# name -> (CIDEr-D, who brought it: None the dataset's own, else (public, withdrawn))
SYSTEMS = {
    "Private best": (0.99, (False, False)),
    "Withdrawn second": (0.95, (True, True)),
    "Public A": (0.80, (True, False)),
    "Own model": (0.70, None),
    "Public D": (0.60, (True, False)),
    "Public E": (0.50, (True, False)),
}
TOP = ["Public A", "Own model", "Public D"]
NEVER = ["Private best", "Withdrawn second", "On a hidden set"]


@pytest.fixture
def site(db):
    metrics_sync()
    owner = UserFactory(username="owner")
    cider = Metric.objects.get(slug="cider_d").current_version
    benchmark = DatasetFactory(
        slug="coco-test", title="COCO test", source_format="karpathy", kind=Dataset.Kind.BENCHMARK
    )
    for number, (name, (value, brought)) in enumerate(SYSTEMS.items()):
        kind = System.Kind.MODEL if brought is None else System.Kind.SUBMISSION
        system = SystemFactory(dataset=benchmark, slug=f"system-{number}", name=name, kind=kind)
        SystemScore.objects.create(system=system, metric_version=cider, value=value, low=value - 0.1, high=value + 0.1)
        if brought is not None:
            status = Submission.Status.WITHDRAWN if brought[1] else Submission.Status.DONE
            SubmissionFactory(owner=owner, system=system, is_public=brought[0], status=status)
    EvaluationJob.objects.create(purpose="dataset", dataset=benchmark, metric_version=cider, status="done")
    hidden = DatasetFactory(
        slug="hidden", title="Hidden set", source_format="karpathy", kind=Dataset.Kind.BENCHMARK, is_public=False
    )
    system = SystemFactory(dataset=hidden, slug="on-hidden", name="On a hidden set", kind="submission")
    SystemScore.objects.create(system=system, metric_version=cider, value=1.0, low=0.9, high=1.0)
    SubmissionFactory(owner=owner, system=system)
    flickr = DatasetFactory(
        slug="flickr8k-expert", title="Flickr8k-Expert", source_format="flickr8k-expert", dimensions=["overall"]
    )
    for slug, (tau_c, tau_b) in {"bleu_4": (0.3, 0.6), "cider_d": (0.5, 0.2), "meteor": (0.4, 0.4)}.items():
        for statistic, value in (("tau_c", tau_c), ("tau_b", tau_b)):
            CorrelationResult.objects.create(
                metric_version=Metric.objects.get(slug=slug).current_version,
                dataset=flickr,
                dimension="overall",
                statistic=statistic,
                protocol="flickr8k-expert/paper@1",
                protocol_name="paper",
                protocol_version="1",
                value=value,
                low=value - 0.05,
                high=value + 0.05,
                n=16992,
            )
    board_refresh(dataset_id=benchmark.pk)
    return {"owner": owner, "benchmark": benchmark, "flickr": flickr}


NEXT = {"best-systems": "best-metrics", "best-metrics": "recent-submissions", "recent-submissions": "benchmarks"}


def section(html: str, name: str) -> str:
    """The part of the home page from the section `name` to the next one."""
    return html.split(f'id="{name}"')[1].split(f'id="{NEXT[name]}"')[0]


def test_the_best_systems_as_their_board_shows_them(client, site):
    html = client.get("/").content.decode()
    best = section(html, "best-systems")
    assert re.findall(r'/systems/[\w-]+/">([^<]+)</a>', best) == TOP
    # Each number in points with its interval, the very text the board prints for it.
    board = captioner_board_page(site["benchmark"], {}, viewer=None)
    page = client.get("/datasets/coco-test/leaderboard/").content.decode()
    for row in board.rows[:3]:
        cell = row.cell(board.sort)
        value, low, high = (points(v, cell.scale) for v in (cell.value, cell.low, cell.high))
        assert f'<strong>{value}</strong> <span class="interval">{low}–{high}</span>' in best
        assert f'{value}<small class="interval">{low}–{high}</small>' in page
    assert "by CIDEr-D" in best


def test_the_best_metrics_as_the_metric_board_ranks_them(client, site):
    best = section(client.get("/").content.decode(), "best-metrics")
    assert re.findall(r'<li><a href="/metrics/([\w-]+)/">', best) == ["cider_d", "meteor", "bleu_4"]
    assert 'href="/metrics/?protocol=paper&amp;sort=flickr8k-expert%3Aoverall%3Atau_c"' in best
    assert "paper 43.9" in best  # CIDEr-D's published tau-c on the same rows, beside ours
    ranked = client.get("/metrics/", {"sort": "flickr8k-expert"}).content.decode()
    order = re.findall(r'<th scope="row" class="metric"[^>]*><a href="/metrics/([\w-]+)/">', ranked)
    assert order[:3] == ["cider_d", "meteor", "bleu_4"]


@pytest.mark.parametrize("who", ["anonymous", "owner", "staff"])
def test_hidden_private_and_withdrawn_systems_are_never_on_the_home_page(client, site, who):
    if who == "owner":
        client.force_login(site["owner"])
    elif who == "staff":
        client.force_login(UserFactory(username="staffer", is_staff=True))
    html = client.get("/").content.decode()
    for name in NEVER:
        assert name not in html, (who, name)
    recent = section(html, "recent-submissions")
    assert re.findall(r'/systems/[\w-]+/">([^<]+)</a>', recent) == ["Public E", "Public D", "Public A"]
    model = home_page(site["owner"] if who == "owner" else None)
    assert [s.name for s in model.systems[0].systems] == TOP


def test_server_commands_for_staff_only(client, db):
    anonymous = client.get("/").content.decode()
    assert "manage.py" not in anonymous
    assert "No captioner benchmark yet." in anonymous
    assert "No public submission yet" in anonymous
    client.force_login(UserFactory(username="staffer", is_staff=True))
    assert "python manage.py datasets fetch" in client.get("/").content.decode()
