"""Manifests and attaching real files into the content-addressed store."""

import hashlib
import io
from pathlib import Path

import pytest
from django.core.management import call_command

from catalog.models import Dataset, Media

pytestmark = pytest.mark.django_db


def _run(*args) -> str:
    out = io.StringIO()
    call_command("datasets", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def demo(repo_root, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "store"
    _run("import", "flickr8k-expert", str(repo_root / "demo" / "flickr8k-expert"), "--slug", "demo")
    return Dataset.objects.get(slug="demo")


def test_demo_declares_media_with_manifest_checksums(demo):
    assert Media.objects.filter(dataset=demo).count() == 100
    assert not Media.objects.filter(dataset=demo, expected_md5="").exists()
    assert not Media.objects.filter(dataset=demo).exclude(stored_path="").exists()


def test_attach_links_matching_files_and_reports_the_rest(demo, tmp_path, settings):
    images = tmp_path / "images"
    images.mkdir()
    good, bad = Media.objects.filter(dataset=demo).order_by("name")[:2]
    content = b"pretend jpeg bytes"
    Media.objects.filter(pk=good.pk).update(expected_md5=hashlib.md5(content).hexdigest())
    (images / good.name).write_bytes(content)
    (images / bad.name).write_bytes(b"not the right bytes")
    (images / "stranger.jpg").write_bytes(b"x")
    summary = _run("media", "attach", "demo", str(images))
    good.refresh_from_db()
    bad.refresh_from_db()
    sha = hashlib.sha256(content).hexdigest()
    assert good.sha256 == sha
    assert good.stored_path == f"{sha[:2]}/{sha}.jpg"
    assert (Path(settings.MEDIA_ROOT) / good.stored_path).read_bytes() == content
    assert not bad.stored_path
    assert "attached 1 files" in summary
    assert "checksum mismatch" in summary
    assert bad.name in summary
    assert "1 files are not media of this dataset" in summary
    assert "99 media still have no file" in summary
    assert "were already attached" in _run("media", "attach", "demo", str(images))


def test_manifest_command_sets_checksums_and_forces_next_import(demo, tmp_path):
    media = Media.objects.filter(dataset=demo).order_by("name").first()
    manifest = tmp_path / "md5.txt"
    manifest.write_text(f"{'a' * 32}  images/{media.name}\n{'b' * 32}  images/elsewhere.jpg\n")
    summary = _run("media", "manifest", "demo", str(manifest))
    media.refresh_from_db()
    assert media.expected_md5 == "a" * 32
    assert media.manifest_path == f"images/{media.name}"
    assert "1 media matched" in summary
    assert "1 manifest entries not in this dataset" in summary
    demo.refresh_from_db()
    assert demo.content_sha256 == ""
