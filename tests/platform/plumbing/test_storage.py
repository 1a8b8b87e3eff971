"""The file store (plumbing/storage.py): content-addressed names kept as given, whole files or none,
and a worker's read cache that refuses a copy whose content is not what the database recorded."""

import hashlib

import boto3
import pytest
from django.core.files.base import ContentFile
from moto import mock_aws

from capbench.settings.files import object_storage
from plumbing import storage


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return tmp_path / "media"


def test_a_name_is_kept_and_its_file_written_once(media_root, tmp_path):
    source = tmp_path / "a.png"
    source.write_bytes(b"picture")
    assert storage.put_path("ab/abc.png", source) == "ab/abc.png"
    other = tmp_path / "b.png"
    other.write_bytes(b"something else")
    assert storage.put_path("ab/abc.png", other) == "ab/abc.png"  # the name exists: kept as it is
    assert (media_root / "ab" / "abc.png").read_bytes() == b"picture"
    assert storage.store().save("ab/abc.png", ContentFile(b"again")) == "ab/abc.png"  # never renamed
    moved = tmp_path / "upload.part"
    moved.write_bytes(b"upload")
    storage.put_path("submissions/up.json", moved, move=True)
    assert not moved.exists()
    assert storage.open_stored("submissions/up.json").read() == b"upload"
    with pytest.raises(FileNotFoundError):
        storage.open_stored("no/such.png")


def test_a_failed_write_leaves_nothing_under_the_name(media_root):
    class Failing(ContentFile):
        def chunks(self, chunk_size=None):
            yield b"half"
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        storage.store().save("cd/cde.png", Failing(b""))
    assert not storage.exists("cd/cde.png")
    assert [path.name for path in (media_root / "cd").iterdir()] == []  # no partial file left either


@mock_aws
def test_a_workers_copy_is_fetched_once_and_checked(settings, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="files")
    settings.STORAGES = {**settings.STORAGES, "default": object_storage("files", None, "us-east-1", "lab")}
    settings.CAPBENCH_FILE_CACHE = tmp_path / "cache"
    source = tmp_path / "p.png"
    source.write_bytes(b"stored picture")
    digest = hashlib.sha256(b"stored picture").hexdigest()
    storage.put_path("ef/efg.png", source)
    assert storage.local_copy("ef/efg.png", digest).read_bytes() == b"stored picture"
    storage.delete("ef/efg.png")
    assert storage.local_copy("ef/efg.png", digest) == tmp_path / "cache" / "ef" / "efg.png"  # from the cache now
    storage.put_path("gh/ghi.png", source)
    with pytest.raises(OSError, match="not 0000"):
        storage.local_copy("gh/ghi.png", "0" * 64)
    assert not (tmp_path / "cache" / "gh" / "ghi.png").exists()
    copies = storage.local_copies({"gh/ghi.png": digest, "ef/efg.png": digest})
    assert {name: path.read_bytes() for name, path in copies.items()} == {
        "gh/ghi.png": b"stored picture",
        "ef/efg.png": b"stored picture",
    }


@mock_aws
def test_an_install_moves_its_local_files_to_a_bucket_with_one_command(settings, tmp_path, monkeypatch):
    from io import StringIO

    from django.core.management import CommandError, call_command

    old = tmp_path / "media"
    for name, content in {
        "ab/abc.png": b"image",
        "submissions/cd/cde-1234.json": b"[]",
        "generated/ef/efg.png": b"picture",
        "submissions/.incoming/0123.part": b"half an upload",
        "ab/.abd.png.5f5f": b"partial",
    }.items():
        (old / name).parent.mkdir(parents=True, exist_ok=True)
        (old / name).write_bytes(content)
    settings.MEDIA_ROOT = old
    with pytest.raises(CommandError, match="is the configured store itself"):
        call_command("files", "upload", str(old))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="files")
    settings.STORAGES = {**settings.STORAGES, "default": object_storage("files", None, "us-east-1", "lab")}
    storage.put_path("ab/abc.png", old / "ab" / "abc.png")  # one there already
    out = StringIO()
    call_command("files", "upload", str(old), stdout=out)
    assert out.getvalue().strip() == "2 file(s) stored in bucket files, 1 there already"
    assert storage.open_stored("generated/ef/efg.png").read() == b"picture"
    assert storage.open_stored("submissions/cd/cde-1234.json").read() == b"[]"
    assert not storage.exists("submissions/.incoming/0123.part")
    assert not storage.exists("ab/.abd.png.5f5f")
    again = StringIO()
    call_command("files", "upload", str(old), stdout=again)
    assert again.getvalue().strip() == "0 file(s) stored in bucket files, 3 there already"
    with pytest.raises(CommandError, match="no such folder"):
        call_command("files", "upload", str(tmp_path / "nowhere"))
