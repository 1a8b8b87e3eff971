"""The catalog pages render the stored content, escaped."""
import pytest

from catalog.importers.registry import read_bundle
from catalog.services.imports import dataset_import

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(repo_root):
    bundle = read_bundle("flickr8k-expert", repo_root / "demo" / "flickr8k-expert")
    bundle.captions[0].text = "<script>alert('x')</script> a dog"
    return dataset_import(bundle=bundle, source_path="demo", slug="demo").dataset


def test_home_lists_datasets(client, demo):
    page = client.get("/").content.decode()
    assert "Flickr8k-Expert" in page and "/datasets/demo/" in page


def test_dataset_detail_shows_counts_protocol_and_escapes_captions(client, demo):
    response = client.get("/datasets/demo/")
    page = response.content.decode()
    assert response.status_code == 200
    assert "0 of 100 files present" in page
    assert "clipscore-1" in page
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page


def test_unknown_dataset_is_404(client, db):
    assert client.get("/datasets/nope/").status_code == 404
