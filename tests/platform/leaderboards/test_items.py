"""The item page: VisCE² run through the engine on a tiny local LLaVA shows its visual context once
for the image and its reply under each candidate; a failed score shows why; a private submission's
caption is its owner's alone (here and in the item browser)."""

import hashlib
import json

import numpy as np
import pytest
from PIL import Image

from catalog.models import Caption, Media, System
from scoring.models import Score
from scoring.services.planning import dataset_plan
from submissions.services import MethodInfo, submission_create
from tests.platform.factories import CaptionFactory, DatasetFactory, ItemFactory, SystemFactory, UserFactory
from tests.platform.scoring.inline import run_jobs

pytestmark = pytest.mark.django_db


@pytest.fixture
def one_item(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    dataset = DatasetFactory(slug="tiny", dimensions=["overall"])
    content = tmp_path / "x.png"
    Image.fromarray(np.full((30, 40, 3), 90, dtype=np.uint8)).save(content)
    sha = hashlib.sha256(content.read_bytes()).hexdigest()
    (settings.MEDIA_ROOT / sha[:2]).mkdir(parents=True)
    (settings.MEDIA_ROOT / sha[:2] / f"{sha}.png").write_bytes(content.read_bytes())
    media = Media.objects.create(dataset=dataset, name="x.png", sha256=sha, stored_path=f"{sha[:2]}/{sha}.png")
    item = ItemFactory(dataset=dataset, external_id="x.png", media=media, references=["a grey square"])
    system = SystemFactory(dataset=dataset, slug="model-a")
    for number, text in enumerate(("a grey square", "a <b>dog</b> on grass")):
        CaptionFactory(item=item, system=system, text=text, external_id=str(number))
    return item


@pytest.mark.slow
def test_visce2_context_and_replies_are_shown_and_failures_say_why(client, llava_store, one_item):
    run_jobs(dataset_plan(dataset=one_item.dataset, slugs=["visce2", "bleu_4"]))
    scores = list(Score.objects.filter(metric_version__metric__slug="visce2").order_by("caption_id"))
    assert len(scores) == 2
    context = scores[0].detail["visual_context"]
    assert context and scores[1].detail["visual_context"] == context  # step 1 once per image
    page = client.get(f"/datasets/tiny/items/{one_item.pk}/").content.decode()
    assert page.count('id="visual-context"') == 1
    table = page[page.index('id="scores"') : page.index("</table>", page.index('id="scores"'))]
    assert ">BLEU-4</a></th>" in table
    assert ">VisCE²</a></th>" in table
    assert table.count('<tr id="caption-') == 2
    bleu = Score.objects.get(metric_version__metric__slug="bleu_4", caption=scores[0].caption)
    assert f">{100 * bleu.value:.1f}</td>" in table  # in points, as the boards show BLEU
    assert f'id="caption-{scores[0].caption_id}-visce2"' in page  # VisCE² wrote something: it is shown
    assert f'id="caption-{scores[0].caption_id}-bleu_4"' not in page  # BLEU-4 only has its number
    from django.utils.html import escape

    assert f'<pre class="reasoning">{escape(context)}</pre>' in page
    assert page.count("<summary>Reasoning</summary>") == 2
    assert escape(scores[0].detail["reply"]) in page
    assert "a &lt;b&gt;dog&lt;/b&gt; on grass" in page
    assert "<b>dog</b>" not in page
    for score in scores:
        if score.value is None:  # a random model's reply may hold no number: shown as a failure, with why
            assert escape(score.error) in page
    Score.objects.filter(pk=scores[0].pk).update(value=None, error="unparseable reply: no number in 0–100")
    page = client.get(f"/datasets/tiny/items/{one_item.pk}/").content.decode()
    assert "unparseable reply: no number in 0–100" in page
    assert "failed" in page


def test_a_private_submissions_caption_is_its_owners_alone(client, one_item, captioner, django_user_model):
    content = json.dumps([{"image_id": "x.png", "caption": "my secret caption"}]).encode()
    submission_create(
        owner=captioner, dataset=one_item.dataset, file_name="r.json", content=content, method=MethodInfo("Secret")
    )
    for url in (f"/datasets/tiny/items/{one_item.pk}/", "/datasets/tiny/items/"):
        assert "my secret caption" not in client.get(url).content.decode()
        assert "a grey square" in client.get(url).content.decode()
    client.force_login(UserFactory(username="someone"))
    assert "my secret caption" not in client.get(f"/datasets/tiny/items/{one_item.pk}/").content.decode()
    client.force_login(captioner)
    for url in (f"/datasets/tiny/items/{one_item.pk}/", "/datasets/tiny/items/"):
        assert "my secret caption" in client.get(url).content.decode()


def test_the_item_browser_links_each_item_and_unknown_items_are_404(client, one_item):
    assert f'href="/datasets/tiny/items/{one_item.pk}/"' in client.get("/datasets/tiny/items/").content.decode()
    assert client.get(f"/datasets/tiny/items/{one_item.pk + 999}/").status_code == 404
    assert client.get(f"/datasets/other/items/{one_item.pk}/").status_code == 404


def test_many_systems_captions_are_shown_a_page_at_a_time_with_their_scores(client, one_item):
    """At 80 systems a page of every candidate with every reading was a megabyte: 20 a page."""
    from leaderboards.items import CANDIDATES_PER_PAGE
    from scoring.services.metrics import metrics_sync

    metrics_sync()
    systems = System.objects.bulk_create(
        [System(dataset=one_item.dataset, slug=f"s-{n:02d}", name=f"System {n:02d}") for n in range(30)]
    )
    captions = Caption.objects.bulk_create(
        [Caption(item=one_item, system=system, text=f"caption of {system.name}") for system in systems]
    )
    version = Score._meta.get_field("metric_version").related_model.objects.get(
        metric__slug="bleu_4", metric__current_version__isnull=False
    )
    Score.objects.bulk_create(
        [Score(caption=c, metric_version=version, value=0.5, input_key=str(c.pk).encode()) for c in captions]
    )
    first = client.get(f"/datasets/tiny/items/{one_item.pk}/").content.decode()
    last = client.get(f"/datasets/tiny/items/{one_item.pk}/?page=2").content.decode()
    shown = [name for name in (f"caption of System {n:02d}" for n in range(30)) if name in first]
    assert len(shown) == CANDIDATES_PER_PAGE - 2  # by system name: Model A's two captions come first
    assert "Candidates 1–20 of 32" in first
    assert "?page=2" in first
    assert "caption of System 29" in last
    assert "caption of System 00" not in last
    assert ">50.0</td>" in last
    assert client.get(f"/datasets/tiny/items/{one_item.pk}/?page=x").status_code == 200
