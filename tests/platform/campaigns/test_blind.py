"""Blind annotation: an annotator cannot tell a gold check from a real task, nor whose caption they
rate, from anything the site shows while the campaign is open (docs/human-evaluation.md, "Blind
annotation").

The scripted attacker owns a submitted system through one account (Ada, at one address) and
annotates through a second (Mal, at another: the address rule does not link them). For every task
Mal is given, Mal reads the annotation page and then every public surface, as Mal and anonymously:
the item browser searched for the caption's first 80 characters, the item pages of every image it
finds and of the shown one, every caption of the per-caption scores API, both public submissions'
pages, the shown picture's URL against the pictures the item browser shows, and after answering the
campaign page's counts. Mal calls a task a gold check when a surface puts the caption on another
image than the one shown (or the gold count moved), real when on the shown one, and tells their own
system's captions by the system named beside them. What Ada's own account reads of Ada's own
captions is not counted: it is Ada's own upload, known to the attacker anyway (the limit the answer
patterns of test_resemblance.py watch).

Before blind annotation the attacker calls every gold check (balanced accuracy 1.0) and names their
own system on each of its captions. Now no surface says anything: every task is "unknown", so the
attacker's balanced accuracy at telling gold checks is exactly chance (0.5), and no caption of
their own system is recognised by its name.
"""

from __future__ import annotations

import html
import io
import json
import random
import re
import zipfile
from dataclasses import dataclass, field

import pytest
from django.test import Client

from campaigns.models import Annotation, Campaign
from campaigns.services.assignment import task_next
from campaigns.services.creation import CampaignSpec, campaign_create, campaign_status_set
from catalog.models import Caption, Item, Media, System
from tests.platform.factories import PASSWORD, submit

pytestmark = pytest.mark.django_db

HOME, ELSEWHERE = "203.0.113.7", "198.51.100.9"
OWN, RIVAL = "Ownsys Captioner", "Rival Captioner"
TASKS = 24  # at a gold rate of one half: about twelve gold checks, and about six of Ada's own captions
WORDS = [
    "heron",
    "otter",
    "lantern",
    "meadow",
    "quarry",
    "violin",
    "harbour",
    "saddle",
    "orchard",
    "glacier",
    "pebble",
    "kettle",
    "canyon",
    "scarf",
    "ladder",
    "tulip",
    "compass",
    "barrel",
    "chimney",
    "ferry",
]


def words_for(name: str):
    """Captions that say nothing of their image's id: six seeded words per image and system."""

    def caption(item: Item) -> str:
        rng = random.Random(f"{name}:{item.external_id}")
        return "a " + " ".join(rng.choice(WORDS) for _ in range(6)) + " in the afternoon light"

    return caption


@pytest.fixture
def unlimited(settings):
    """The attacker makes hundreds of requests: the abuse limits are not under test here."""
    settings.CAPBENCH_RATE_LIMITS_ENABLED = False


@pytest.fixture
def arena(demo_pictures, make_user, staff, unlimited):
    """Ada's and Bob's public submissions in an open rating campaign with gold checks."""
    ada, bob = make_user("ada"), make_user("bob")
    mine = submit(ada, demo_pictures, OWN, caption=words_for(OWN))
    rival = submit(bob, demo_pictures, RIVAL, caption=words_for(RIVAL))
    spec = CampaignSpec(
        slug="blind",
        title="Blind",
        dataset=demo_pictures,
        systems=[mine.system, rival.system],
        gold_rate=0.5,
        ratings_wanted=3,
    )
    campaign = campaign_create(spec=spec, created_by=staff)
    return campaign, mine, rival


def signed_in(username: str, address: str) -> Client:
    client = Client(REMOTE_ADDR=address)
    response = client.post("/accounts/login/", {"username": username, "password": PASSWORD})
    assert response.status_code == 302, response.content[:300]
    return client


@dataclass
class Surfaces:
    """What the attacker reads of the site: per caption text, the images and systems shown with it."""

    viewers: list[Client]
    submissions: list[int]
    pictures: dict[str, str] = field(default_factory=dict)  # picture URL -> image id, from the item browser
    item_pks: dict[str, int] = field(default_factory=dict)  # image id -> item page number
    listed: dict[str, set[tuple[str, str]]] = field(default_factory=dict)  # text -> {(image id, system)}

    def see(self, text: str, image: str, system: str) -> None:
        self.listed.setdefault(text, set()).add((image, system))

    def crawl(self) -> None:
        """Everything listed once: every page of the item browser, the scores API, the submissions' pages."""
        for client in self.viewers:
            page = 1
            while True:
                body = client.get(f"/datasets/demo/items/?page={page}").content.decode()
                self._browser_page(body)
                if "next</a>" not in body:
                    break
                page += 1
            url = "/api/v1/scores/?dataset=demo&layout=wide&page_size=1000"
            while url:
                found = client.get(url).json()
                for row in found["results"]:
                    self.see(row["caption"], row["item"], row["system"])
                url = found.get("next")
            for pk in self.submissions:
                body = client.get(f"/submissions/{pk}/").content.decode()
                system = html.unescape(re.search(r"<title>([^<]*)", body).group(1))
                for image, caption in re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td>", body):
                    self.see(html.unescape(caption), html.unescape(image), system)

    def _browser_page(self, body: str) -> None:
        for pk, section in re.findall(r'<section class="item" id="item-(\d+)">(.*?)</section>', body, re.S):
            image = html.unescape(re.search(r'<h3><a href="[^"]*">([^<]*)</a></h3>', section).group(1))
            self.item_pks[image] = int(pk)
            src = re.search(r'<img [^>]*src="([^"]+)"', section)
            if src:
                self.pictures[src.group(1)] = image
            for caption, system in re.findall(r'<li>([^<]*) <span class="muted">— ([^<]*)</span>', section):
                self.see(html.unescape(caption), image, html.unescape(system))

    def search(self, text: str) -> None:
        """The item browser searched for the caption's first 80 characters, and the item pages it finds."""
        query = text[:80]
        for client in self.viewers:
            body = client.get("/datasets/demo/items/", {"q": query}).content.decode()
            self._browser_page(body)
            for image in re.findall(r'<h3><a href="[^"]*">([^<]*)</a></h3>', body):
                self.item_page(client, html.unescape(image))

    def item_page(self, client: Client, image: str) -> None:
        body = client.get(f"/datasets/demo/items/{self.item_pks[image]}/").content.decode()
        for caption, system in re.findall(
            r'<tr id="caption-\d+"><td>(?:<a [^>]*>)?([^<]*)(?:</a>)?</td>\s*<td class="muted">([^<]*)</td>', body
        ):
            self.see(html.unescape(caption), image, html.unescape(system))


def progress_gold(client: Client) -> int | None:
    """The gold checks the campaign's page counts, where it says (None where it does not)."""
    body = client.get("/campaigns/blind/").content.decode()
    found = re.search(r"(\d+) gold check", body)
    return int(found.group(1)) if found else None


PER_ANSWER = {"values", "shown_at", "answered_at", "caption", "other_caption"}  # what differs by nature


def downloaded_verdict(answer: dict, surfaces: Surfaces) -> str:
    """An answer of the account data download called as a gold check or a real task: by its gold mark,
    or by its caption listed on another image than its own."""
    if answer["gold_check"] is not None:
        return "gold" if answer["gold_check"] else "real"
    images = {image for image, _ in surfaces.listed.get(answer["caption"] or "", set())}
    if answer["image_id"] is not None and images:
        return "real" if answer["image_id"] in images else "gold"
    return "unknown"


@pytest.mark.slow
def test_the_attacker_tells_no_gold_check_and_never_their_own_systems_captions(arena, make_user):
    campaign, mine, rival = arena
    make_user("mal")
    signed_in("ada", HOME)  # Ada's address is recorded; Mal is never seen there
    mal = signed_in("mal", ELSEWHERE)
    surfaces = Surfaces([mal, Client(REMOTE_ADDR="192.0.2.80")], [mine.pk, rival.pk])
    surfaces.crawl()
    rubric = [d["key"] for d in campaign.rubric]

    truth, verdicts, after, own_truth, own_named, leaks = [], [], [], [], [], []
    for _ in range(TASKS):
        page = mal.get("/campaigns/blind/annotate/").content.decode()
        task_pk = int(re.search(r'name="task" value="(\d+)"', page).group(1))
        task = Annotation.objects.select_related("caption__system", "item__media").get(pk=task_pk)
        text = html.unescape(
            re.search(r'<blockquote class="caption-shown" id="caption">([^<]*)</blockquote>', page).group(1)
        )
        assert text == task.caption.text
        src = re.search(r'<figure class="task-media"><img [^>]*src="([^"]+)"', page).group(1)
        # Nothing on the page names the image, its file, the caption or a system (checked below).
        named = (
            task.item.external_id,
            f"/media-files/{task.item.media_id}/",
            task.item.media.stored_path,
            task.item.media.name,
            OWN,
            RIVAL,
            f'value="{task.caption_id}"',
        )
        leaks += [leak for leak in named if leak in page]

        surfaces.search(text)
        shown = surfaces.pictures.get(src)
        if shown is not None:
            surfaces.item_page(mal, shown)
        where = surfaces.listed.get(text, set())
        images = {image for image, _ in where}
        if images and shown is not None:
            verdict = "real" if shown in images else "gold"
        elif images:  # the shown picture not found by its URL: compare the pictures themselves
            task_bytes = b"".join(mal.get(src).streaming_content)
            others = {
                b"".join(mal.get(url).streaming_content) for url, image in surfaces.pictures.items() if image in images
            }
            # Every demo picture is the same tiny file: equal bytes tell nothing; different ones would.
            verdict = "gold" if others and task_bytes not in others else "unknown"
        else:
            verdict = "unknown"
        systems = {system for _, system in where}
        own_named.append(any(OWN.lower() in s.lower() or mine.system.slug == s for s in systems))

        before = progress_gold(mal)
        response = mal.post("/campaigns/blind/annotate/", {"task": task_pk, **{f"dim-{key}": "3" for key in rubric}})
        assert response.status_code == 302
        moved = progress_gold(mal)
        after.append("unknown" if before is None or moved is None else ("gold" if moved > before else "real"))

        truth.append(task.is_gold)
        verdicts.append(verdict)
        own_truth.append(task.caption.system_id == mine.system_id)

    # Mal downloads their data (a task is open meanwhile) and calls each answer by what it says of it.
    mal.get("/campaigns/blind/annotate/")
    response = mal.post("/accounts/export/", {"password": PASSWORD})
    assert response.status_code == 200, response.content[:300]
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    answers = json.loads(archive.read("campaigns/answers.json"))
    assert len(answers) == TASKS  # the open task is not in it
    downloaded = [downloaded_verdict(answer, surfaces) for answer in answers]
    alike = {json.dumps({k: v for k, v in a.items() if k not in PER_ANSWER}, sort_keys=True) for a in answers}
    assert len(alike) == 1, alike  # but for the answer, its time and the text shown, every entry is the same

    gold, real = truth.count(True), truth.count(False)
    assert gold >= 6 and real >= 6, truth  # enough of both for the rates below to mean something
    assert sum(own_truth) >= 3, own_truth  # Mal was given Ada's own captions (as real tasks or decoys)

    def balanced_accuracy(calls: list[str]) -> float:
        caught = sum(call == "gold" for call, is_gold in zip(calls, truth, strict=True) if is_gold)
        spared = sum(call != "gold" for call, is_gold in zip(calls, truth, strict=True) if not is_gold)
        return (caught / gold + spared / real) / 2

    # No surface tells anything: every call is "unknown", which is chance whatever the attacker guesses.
    caught = sum(call == "gold" for call, is_gold in zip(verdicts, truth, strict=True) if is_gold)
    told = f"the attacker called {caught} of {gold} gold checks (balanced accuracy {balanced_accuracy(verdicts)})"
    assert verdicts == ["unknown"] * TASKS, (told, list(zip(verdicts, truth, strict=True)))
    assert after == ["unknown"] * TASKS, list(zip(after, truth, strict=True))
    assert downloaded == ["unknown"] * TASKS, list(zip(downloaded, truth, strict=True))
    assert balanced_accuracy(verdicts) == balanced_accuracy(after) == balanced_accuracy(downloaded) == 0.5
    assert not any(own_named), list(zip(own_named, own_truth, strict=True))
    assert not leaks, leaks


def test_blind_captions_are_listed_to_staff_and_their_owner_and_to_everyone_once_closed(
    fresh_page_memory, arena, staff, make_user
):
    campaign, mine, rival = arena
    mal = Client(REMOTE_ADDR=ELSEWHERE)
    mal.force_login(make_user("mal"))
    owner = Client(REMOTE_ADDR=HOME)
    owner.force_login(mine.owner)
    boss = Client()
    boss.force_login(staff)
    own_text = mine.system.captions.order_by("id").first().text
    rival_text = rival.system.captions.order_by("id").first().text

    def found(client: Client, text: str) -> bool:
        """Listed among the candidates the item browser's search finds (not merely its query echoed)."""
        body = client.get("/datasets/demo/items/", {"q": text[:80]}).content.decode()
        return f"<li>{html.escape(text)} " in body

    assert not found(mal, own_text)
    assert not found(Client(), rival_text)
    assert found(boss, own_text)
    assert found(boss, rival_text)  # the organisers see every caption
    assert found(owner, own_text)
    assert not found(owner, rival_text)  # an owner their own only
    notice = mal.get("/datasets/demo/items/").content.decode()
    assert 'id="captions-blind"' in notice
    assert "The captions of 2 systems are not listed" in notice
    rival_page = mal.get(f"/submissions/{rival.pk}/").content.decode()
    assert 'id="scores-blind"' in rival_page
    assert html.escape(rival_text) not in rival_page
    assert html.escape(own_text) in owner.get(f"/submissions/{mine.pk}/").content.decode()
    api = mal.get("/api/v1/scores/", {"system": rival.system.slug, "layout": "wide"}).json()
    assert api["results"] == []
    compare = mal.get(f"/datasets/demo/compare/?a={mine.system.slug}&b={rival.system.slug}").content.decode()
    assert 'id="explorer-blind"' in compare
    assert html.escape(rival_text) not in compare

    campaign_status_set(campaign=campaign, status=Campaign.Status.CLOSED)
    assert found(mal, own_text)
    assert found(Client(), rival_text)
    assert 'id="captions-blind"' not in mal.get("/datasets/demo/items/").content.decode()
    assert len(mal.get("/api/v1/scores/", {"system": rival.system.slug, "layout": "wide"}).json()["results"]) == 100


def test_a_decoy_is_never_a_caption_a_search_would_find(arena, demo_pictures, make_user):
    """A third public system outside the campaign says what the rival says, each on another image:
    a search for a rival caption finds an image, so no rival caption is ever a decoy; Ada's are."""
    campaign, mine, rival = arena
    items = list(Item.objects.filter(dataset=demo_pictures).order_by("id"))
    shifted = {item.pk: items[(n + 1) % len(items)] for n, item in enumerate(items)}
    copy = words_for(RIVAL)
    submit(make_user("cyd"), demo_pictures, "Copycat", caption=lambda item: copy(shifted[item.pk]))
    Campaign.objects.filter(pk=campaign.pk).update(gold_rate=1.0)  # every task a gold check
    campaign.refresh_from_db()
    decoys, tasks = [], []
    for name in ("ann", "ned"):
        user = make_user(name)
        for _ in range(10):
            task = task_next(campaign=campaign, annotator=user)
            Annotation.objects.filter(pk=task.pk).update(status=Annotation.Status.SKIPPED)
            decoys.append(task.decoy)
            tasks.append(task)
    assert all(decoy is not None for decoy in decoys), [(d and d.system.name) for d in decoys]
    assert {decoy.system_id for decoy in decoys} == {mine.system_id}
    # each decoy is another image's caption than its own task's (it was compared with the last task's)
    assert [decoy.item_id != task.item_id for decoy, task in zip(decoys, tasks, strict=True)] == [True] * 20


def test_the_task_picture_is_its_annotators_alone_while_the_task_is_open(arena, make_user):
    campaign = arena[0]
    ann, ned = Client(REMOTE_ADDR="192.0.2.1"), Client(REMOTE_ADDR="192.0.2.2")
    ann_user = make_user("ann")
    ann.force_login(ann_user)
    ned.force_login(make_user("ned"))
    page = ann.get("/campaigns/blind/annotate/").content.decode()
    src = re.search(r'<figure class="task-media"><img [^>]*src="([^"]+)"', page).group(1)
    task = Annotation.objects.get(campaign=campaign, annotator=ann_user, status=Annotation.Status.SHOWN)
    served = ann.get(src)
    assert served.status_code == 200
    assert "Content-Disposition" not in served
    assert served["Cache-Control"].startswith("max-age=0") or "no-cache" in served["Cache-Control"]
    assert ned.get(src).status_code == 404
    assert Client().get(src).status_code == 404
    ned.get("/campaigns/blind/annotate/")
    assert ned.get(src).status_code == 404  # Ned's own task does not open Ann's picture
    assert ann.get(src.replace(src[-33:-1], "0" * 32)).status_code == 404
    ann.post("/campaigns/blind/annotate/", {"task": task.pk, "skip": "1"})
    assert ann.get(src).status_code == 404  # answered or skipped: the name is spent


def test_a_picture_its_publisher_serves_is_a_redirect_from_the_tasks_own_name(arena, make_user, settings):
    settings.CAPBENCH_MEDIA_HOSTS = ["images.cocodataset.org"]
    for media in Media.objects.filter(dataset__slug="demo"):
        media.stored_path, media.url = "", f"https://images.cocodataset.org/val2014/{media.name}"
        media.save(update_fields=["stored_path", "url"])
    ann_user = make_user("ann")
    ann = Client(REMOTE_ADDR="192.0.2.1")
    ann.force_login(ann_user)
    page = ann.get("/campaigns/blind/annotate/").content.decode()
    assert "cocodataset" not in page
    src = re.search(r'<figure class="task-media"><img [^>]*src="([^"]+)"', page).group(1)
    task = Annotation.objects.select_related("item__media").get(annotator=ann_user, status=Annotation.Status.SHOWN)
    served = ann.get(src)
    assert served.status_code == 302
    assert served["Location"] == task.item.media.url


KINDS = ("caption", "judgment")


def test_the_datasets_download_leaves_out_its_own_systems_captions_while_a_campaign_rates_them(
    arena, demo_pictures, staff
):
    """A campaign may rate the dataset's own systems (campaign_systems_allowed): their captions, and the
    judgments of them, leave the dataset's download (to all but staff) while it is open."""
    campaign, mine, _ = arena
    own = System.objects.own().filter(dataset=demo_pictures).order_by("slug").first()
    campaign.systems.add(own)
    boss = Client()
    boss.force_login(staff)

    def captions(client: Client) -> dict[str, int]:
        lines = [json.loads(line) for line in client.get("/datasets/demo/download.jsonl").content.decode().splitlines()]
        return {kind: sum(ln["type"] == kind and ln.get("system") == own.slug for ln in lines) for kind in KINDS}

    stored = Caption.objects.filter(system=own).count()
    assert stored and captions(Client())["caption"] == 0 and captions(Client())["judgment"] == 0
    assert captions(boss)["caption"] == stored
    campaign_status_set(campaign=campaign, status=Campaign.Status.CLOSED)
    assert captions(Client())["caption"] == stored
    assert captions(Client())["judgment"] > 0
