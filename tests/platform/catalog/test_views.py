"""The catalog pages render the stored content, escaped."""

from pathlib import Path

import pytest

from catalog.importers.registry import read_bundle
from catalog.services.imports import dataset_import
from tests.platform.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(repo_root):
    bundle = read_bundle("flickr8k-expert", repo_root / "demo" / "flickr8k-expert")
    bundle.captions[0].text = "<script>alert('x')</script> a dog"
    return dataset_import(bundle=bundle, source_path="demo", slug="demo").dataset


def test_home_lists_datasets(fresh_page_memory, client, demo):
    page = client.get("/").content.decode()
    assert "Flickr8k-Expert" in page
    assert "/datasets/demo/" in page


def test_dataset_detail_shows_counts_protocol_and_escapes_captions(client, demo):
    response = client.get("/datasets/demo/")
    page = response.content.decode()
    assert response.status_code == 200
    assert "0 of 100 files stored here" in page
    assert "clipscore-1" in page
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert" in page
    # Its meta-evaluation protocols, each with its statistics, rows, references and corpus rule.
    protocols = page[page.index("Meta-evaluation protocols") :]
    assert "Paper protocol (v1)" in protocols
    assert "Canonical protocol (v1)" in protocols
    assert "Kendall τ-c (headline)" in protocols
    assert "one document per row of the protocol — CLIPScore/PAC-S correlation code" in protocols


def test_unknown_dataset_is_404(client, db):
    assert client.get("/datasets/nope/").status_code == 404


def test_item_browser_pages_searches_and_escapes(client, demo):
    page = client.get("/datasets/demo/items/").content.decode()
    assert page.count('<section class="item"') == 20
    assert "Page 1 of 5" in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; a dog" in page
    assert "<script>alert" not in page
    found = client.get("/datasets/demo/items/", {"q": "alert('x')"}).content.decode()
    assert found.count('<section class="item"') == 1
    assert "1 item matching" in found
    assert "(the image file is not present on this server)" in page


def test_download_is_the_canonical_jsonl_and_reimports_identically(client, demo, tmp_path):
    import io

    from catalog.importers import canonical
    from catalog.services.exports import dataset_bundle

    response = client.get("/datasets/demo/download.jsonl")
    assert response["Content-Disposition"] == 'attachment; filename="demo.jsonl"'
    path = tmp_path / "demo.jsonl"
    path.write_bytes(response.content)
    expected = io.StringIO()
    canonical.write(dataset_bundle(dataset=type(demo).objects.get(pk=demo.pk)), expected)
    assert response.content.decode() == expected.getvalue()
    assert read_bundle("canonical", path).fingerprint() == dataset_bundle(dataset=demo).fingerprint()


def test_attached_images_are_served_by_id_only(client, demo, settings, tmp_path):
    from catalog.models import Media

    settings.MEDIA_ROOT = tmp_path
    media = Media.objects.filter(dataset=demo).first()
    assert client.get(f"/media-files/{media.pk}/").status_code == 404  # declared, not attached
    (tmp_path / "ab").mkdir()
    (tmp_path / "ab" / "file.jpg").write_bytes(b"jpeg bytes")
    Media.objects.filter(pk=media.pk).update(stored_path="ab/file.jpg")
    response = client.get(f"/media-files/{media.pk}/")
    assert b"".join(response.streaming_content) == b"jpeg bytes"
    page = client.get("/datasets/demo/items/", {"q": media.name.split(".")[0]}).content.decode()
    assert f'src="/media-files/{media.pk}/"' in page


@pytest.mark.django_db(transaction=True)
def test_system_counts_are_the_systems_the_viewer_sees_on_the_board(fresh_page_memory, client, demo, django_user_model):
    """The dataset list and page count what the board shows this viewer: not the dataset's other
    caption sources, nor private or withdrawn submissions (their owner's count includes theirs)."""
    import re

    from catalog.models import System
    from catalog.uploads.services import upload_withdraw
    from submissions.services import SUBMISSIONS
    from tests.platform.factories import submit

    def counted(page: str) -> int:
        return int(re.search(r"· (\d+) systems</dd>", page).group(1))

    def board_rows() -> int:
        return len(client.get("/datasets/demo/leaderboard/?download=json").json()["systems"])

    owner = UserFactory(username="owner")
    submit(owner, demo, "public one", caption="a dog public one")
    submit(owner, demo, "private one", caption="a dog private one", public=False)
    submit(owner, demo, "withdrawn one", caption="a dog withdrawn one")
    from submissions.models import Submission

    upload_withdraw(upload=Submission.objects.get(method_name="withdrawn one"), kind=SUBMISSIONS)
    # A caption source the board does not rank (neither a model, people, nor a baseline).
    System.objects.create(dataset=demo, slug="mixed-source", name="Mixed source", kind=System.Kind.MIXED)
    from leaderboards.snapshots import board_refresh

    board_refresh(dataset_id=demo.pk)

    def agree() -> int:
        shown = board_rows()
        assert counted(client.get("/datasets/demo/").content.decode()) == shown
        assert f'<td class="num">{shown}</td>' in client.get("/").content.decode()
        return shown

    anonymous = agree()
    assert System.objects.filter(dataset=demo).count() == anonymous + 3  # private, withdrawn, mixed
    client.force_login(owner)
    assert agree() == anonymous + 1  # their private one; the withdrawn one is off the board for all
    client.force_login(UserFactory(username="staff", is_staff=True))
    assert agree() == anonymous + 1


def test_the_dataset_list_separates_benchmarks_from_meta_evaluation_sets_each_opening_on_its_page(
    fresh_page_memory, client, demo_dataset
):
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "datasets" / "nocaps" / "nocaps_val_4500_captions.json"
    benchmark = dataset_import(bundle=read_bundle("nocaps", fixture), source_path="test").dataset
    for url in ("/", "/datasets/"):
        page = client.get(url).content.decode()
        benchmarks, meta = page.split('id="benchmark-datasets"')[1].split('id="meta-evaluation"')
        assert benchmark.title in benchmarks
        assert demo_dataset.title not in benchmarks
        assert demo_dataset.title in meta
        assert benchmark.title not in meta
        assert f'href="/datasets/{benchmark.slug}/leaderboard/"' in benchmarks
        assert f'href="/datasets/{demo_dataset.slug}/significance/"' in meta
    # Each default page answers, also before any metric was correlated (the metrics ranked: none yet)
    assert client.get(f"/datasets/{benchmark.slug}/leaderboard/").status_code == 200
    ranked = client.get(f"/datasets/{demo_dataset.slug}/significance/")
    assert ranked.status_code == 200
    assert "no metric has been correlated" in ranked.content.decode()
