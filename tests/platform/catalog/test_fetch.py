"""`datasets fetch NAME` and `datasets catalogue`, offline: catalogues of `file://` and local-HTTP
fixture archives built here, and the built-in catalogue checked for well-formed entries."""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from catalog.fetching.builtin import BUILTIN, HTTP_ONLY_HOSTS, builtin_entries
from catalog.fetching.download import part_path
from catalog.importers.registry import IMPORTERS
from catalog.models import Dataset, Judgment, Media
from tests.platform.catalog.range_server import range_server

pytestmark = pytest.mark.django_db

VIDEOS = {
    "vid1301": ("eyhzdC936uk_15_27.avi", "a man plays with his dog", [[4, 3, 5, 4, 4.0], [3, 3, 4, 4, 3.5]]),
    "vid1302": ("abcdefghijk_1_9.avi", "a cat sleeps on a sofa", [[5, 5, 5, 5, 5.0], [2, 3, 4, 3, 3.0]]),
}


def _msvd_eval_json() -> bytes:
    document = {
        video: {"vname": name, "ref": ["a reference", "another reference"], "candidate": text, "human_score": scores}
        for video, (name, text, scores) in VIDEOS.items()
    }
    return json.dumps(document, indent=4).encode()


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as bundle:
        for name, data in members.items():
            bundle.writestr(name, data)
    return path


def _tar_gz(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as bundle:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            bundle.addfile(info, io.BytesIO(data))
    return path


def _file(path: Path, url: str | None = None, *, extract=None, sha256: str | None = "computed") -> dict:
    data = path.read_bytes()
    return {
        "name": path.name,
        "url": url or path.as_uri(),
        "size": len(data) if sha256 else None,
        "sha256": hashlib.sha256(data).hexdigest() if sha256 == "computed" else sha256,
        "provenance": "built by the test",
        "extract": extract,
    }


def _entry(name: str, files: list[dict], *, format="msvd-eval", path="**/MSVD-Eval.json", slug=None, **more) -> dict:
    return {
        "name": name,
        "title": f"Fetched {name}",
        "kind": "meta-evaluation",
        "licence": "test licence",
        "homepage": "https://example.org/",
        "files": files,
        "import": {"format": format, "path": path, "slug": slug or name, **more.pop("import_extra", {})},
        **more,
    }


@pytest.fixture
def sources(tmp_path) -> Path:
    folder = tmp_path / "sources"
    folder.mkdir()
    _zip(folder / "msvd-eval.zip", {"release/MSVD-Eval.json": _msvd_eval_json(), "release/README.txt": b"x"})
    return folder


def _catalogue(tmp_path: Path, entries: list[dict]) -> Path:
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps(entries))
    return path


def _run(*args: str, catalogue: Path, downloads: Path) -> str:
    out = io.StringIO()
    call_command("datasets", *args, "--catalogue", str(catalogue), "--downloads-dir", str(downloads), stdout=out)
    return out.getvalue()


def test_fetch_downloads_verifies_extracts_and_imports_then_does_nothing_twice(tmp_path, sources):
    archive = sources / "msvd-eval.zip"
    catalogue = _catalogue(tmp_path, [_entry("msvd-eval-demo", [_file(archive, extract=["*/MSVD-Eval.json"])])])
    downloads = tmp_path / "downloads"
    first = _run("fetch", "msvd-eval-demo", catalogue=catalogue, downloads=downloads)
    dataset = Dataset.objects.get(slug="msvd-eval-demo")
    assert dataset.items.count() == 2
    assert dataset.title == "Fetched msvd-eval-demo"
    assert Judgment.objects.filter(caption__item__dataset=dataset).count() == 2 * 2 * 4
    assert f"downloaded {archive.stat().st_size:,} bytes" in first
    assert "sha256 verified" in first
    assert "unpacked 1 files" in first
    assert "msvd-eval-demo: imported" in first
    assert (downloads / "msvd-eval-demo" / "release" / "MSVD-Eval.json").is_file()
    assert not (downloads / "msvd-eval-demo" / "release" / "README.txt").exists()
    second = _run("fetch", "msvd-eval-demo", catalogue=catalogue, downloads=downloads)
    assert "already downloaded (verified), nothing downloaded" in second
    assert "unchanged (same content already stored)" in second
    assert Dataset.objects.filter(slug="msvd-eval-demo").count() == 1


def test_fetch_resumes_a_truncated_part_file_over_http(tmp_path, sources):
    data = (sources / "msvd-eval.zip").read_bytes()
    downloads = tmp_path / "downloads"
    (downloads / "resumed").mkdir(parents=True)
    part_path(downloads / "resumed" / "msvd-eval.zip").write_bytes(data[:100])
    with range_server({"msvd-eval.zip": data}) as served:
        url = f"{served.base}/msvd-eval.zip"
        catalogue = _catalogue(
            tmp_path, [_entry("resumed", [_file(sources / "msvd-eval.zip", url, extract=["*.json"])])]
        )
        output = _run("fetch", "resumed", catalogue=catalogue, downloads=downloads)
    assert served.bytes_sent == len(data) - 100
    assert served.requests == [("/msvd-eval.zip", "bytes=100-", 206)]
    assert f"downloaded {len(data) - 100:,} bytes, resumed after 100 bytes" in output
    assert Dataset.objects.get(slug="resumed").items.count() == 2


def test_a_200_answer_to_a_range_request_restarts_cleanly(tmp_path, sources):
    data = (sources / "msvd-eval.zip").read_bytes()
    downloads = tmp_path / "downloads"
    (downloads / "restarted").mkdir(parents=True)
    part_path(downloads / "restarted" / "msvd-eval.zip").write_bytes(b"garbage from another file")
    with range_server({"msvd-eval.zip": data}, honour_range=False) as served:
        url = f"{served.base}/msvd-eval.zip"
        catalogue = _catalogue(
            tmp_path, [_entry("restarted", [_file(sources / "msvd-eval.zip", url, extract=["*.json"])])]
        )
        _run("fetch", "restarted", catalogue=catalogue, downloads=downloads)
    assert [status for _, _, status in served.requests] == [200]
    assert served.bytes_sent == len(data)
    assert (downloads / "restarted" / "msvd-eval.zip").read_bytes() == data
    assert Dataset.objects.filter(slug="restarted").exists()


def test_checksum_mismatch_stops_before_importing_and_removes_the_part_file(tmp_path, sources):
    archive = sources / "msvd-eval.zip"
    wrong = "ab" * 32
    catalogue = _catalogue(tmp_path, [_entry("tampered", [_file(archive, extract=["*.json"], sha256=wrong)])])
    catalogue_entries = json.loads(catalogue.read_text())
    catalogue_entries[0]["files"][0]["size"] = archive.stat().st_size
    catalogue.write_text(json.dumps(catalogue_entries))
    downloads = tmp_path / "downloads"
    with pytest.raises(CommandError) as error:
        _run("fetch", "tampered", catalogue=catalogue, downloads=downloads)
    message = str(error.value)
    actual = hashlib.sha256(archive.read_bytes()).hexdigest()
    assert archive.as_uri() in message
    assert wrong in message
    assert actual in message
    assert not Dataset.objects.filter(slug="tampered").exists()
    assert not part_path(downloads / "tampered" / "msvd-eval.zip").exists()
    assert not (downloads / "tampered" / "msvd-eval.zip").exists()


def test_unverified_entry_is_refused_without_the_flag(tmp_path, sources):
    archive = sources / "msvd-eval.zip"
    catalogue = _catalogue(tmp_path, [_entry("unpinned", [_file(archive, extract=["*.json"], sha256=None)])])
    downloads = tmp_path / "downloads"
    with pytest.raises(CommandError, match="no sha256 .*--accept-unverified"):
        _run("fetch", "unpinned", catalogue=catalogue, downloads=downloads)
    assert not downloads.exists()
    assert not Dataset.objects.filter(slug="unpinned").exists()
    assert "unverified" in _run("catalogue", catalogue=catalogue, downloads=downloads)
    output = _run("fetch", "unpinned", "--accept-unverified", catalogue=catalogue, downloads=downloads)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    assert f"size {archive.stat().st_size:,} bytes, sha256 {digest}" in output
    assert Dataset.objects.filter(slug="unpinned").exists()


def test_archive_with_a_member_outside_its_folder_is_refused(tmp_path, sources):
    evil = _zip(sources / "evil.zip", {"MSVD-Eval.json": _msvd_eval_json(), "../evil": b"owned"})
    catalogue = _catalogue(tmp_path, [_entry("tricked", [_file(evil, extract=["*"])], path="MSVD-Eval.json")])
    downloads = tmp_path / "downloads"
    with pytest.raises(CommandError, match=r"'\.\./evil' leads outside"):
        _run("fetch", "tricked", catalogue=catalogue, downloads=downloads)
    assert not (downloads / "evil").exists()
    assert not (downloads / "tricked" / "MSVD-Eval.json").exists()
    assert not Dataset.objects.filter(slug="tricked").exists()


def test_tar_gz_benchmark_split_with_hidden_references(tmp_path, repo_root):
    fixtures = repo_root / "tests" / "fixtures" / "datasets" / "msvd"
    archive = _tar_gz(
        tmp_path / "msvd.tar.gz",
        {
            f"msvd/{name}": (fixtures / name).read_bytes()
            for name in ("AllVideoDescriptions.txt", "youtube_mapping.txt")
        },
    )
    entry = _entry(
        "msvd-hidden",
        [_file(archive, extract=["msvd/*.txt"])],
        format="msvd",
        path="msvd/AllVideoDescriptions.txt",
        import_extra={"split": "test", "references_hidden": True},
    )
    entry["kind"] = "benchmark"
    catalogue = _catalogue(tmp_path, [entry])
    _run("fetch", "msvd-hidden", catalogue=catalogue, downloads=tmp_path / "downloads")
    dataset = Dataset.objects.get(slug="msvd-hidden")
    assert dataset.kind == "benchmark" and dataset.references_hidden and dataset.items.exists()


def test_no_import_downloads_only_and_catalogue_shows_what_is_present(tmp_path, sources):
    archive = sources / "msvd-eval.zip"
    catalogue = _catalogue(
        tmp_path,
        [
            _entry("fetched", [_file(archive, extract=["*.json"])]),
            _entry("never-fetched", [_file(archive, extract=["*.json"])]),
        ],
    )
    downloads = tmp_path / "downloads"
    _run("fetch", "fetched", "--no-import", catalogue=catalogue, downloads=downloads)
    assert not Dataset.objects.filter(slug="fetched").exists()
    rows = {line.split()[0]: line for line in _run("catalogue", catalogue=catalogue, downloads=downloads).splitlines()}
    assert "downloaded, verified" in rows["fetched"]
    assert rows["fetched"].split()[6] == "no"
    assert "absent" in rows["never-fetched"]
    _run("fetch", "fetched", catalogue=catalogue, downloads=downloads)
    machine = json.loads(_run("catalogue", "--json", catalogue=catalogue, downloads=downloads))
    by_name = {row["name"]: row for row in machine}
    assert by_name["fetched"]["downloaded"] and by_name["fetched"]["imported"] and by_name["fetched"]["verified"]
    assert not by_name["never-fetched"]["downloaded"] and not by_name["never-fetched"]["imported"]
    assert by_name["fetched"]["size"] == archive.stat().st_size


def test_with_media_downloads_and_attaches_the_videos(tmp_path, sources, settings):
    settings.MEDIA_ROOT = tmp_path / "store"
    clips = _tar_gz(sources / "clips.tar.gz", {f"clips/{name}": name.encode() for name, _, _ in VIDEOS.values()})
    entry = _entry(
        "with-media",
        [_file(sources / "msvd-eval.zip", extract=["*.json"])],
        media={"files": [_file(clips, extract=["*.avi"])]},
    )
    catalogue = _catalogue(tmp_path, [entry])
    output = _run("fetch", "with-media", "--with-media", catalogue=catalogue, downloads=tmp_path / "downloads")
    assert f"media to download: {clips.stat().st_size:,} B" in output
    assert "attached 2 media files" in output
    assert "0 media still have no file" in output
    assert not Media.objects.filter(dataset__slug="with-media", stored_path="").exists()


def test_unknown_entry_and_bad_catalogue_are_plain_errors(tmp_path, sources):
    catalogue = _catalogue(tmp_path, [_entry("only-one", [_file(sources / "msvd-eval.zip", extract=["*.json"])])])
    with pytest.raises(CommandError, match="no catalogue entry 'other' .*only-one"):
        _run("fetch", "other", catalogue=catalogue, downloads=tmp_path)
    bad = _catalogue(tmp_path, [_entry("bad", [{**_file(sources / "msvd-eval.zip"), "url": "ftp://x/y"}])])
    with pytest.raises(CommandError, match="field 'url': 'ftp://x/y': only http, https, file URLs"):
        _run("catalogue", catalogue=bad, downloads=tmp_path)
    bad.write_text("{not json")
    with pytest.raises(CommandError, match="not a JSON catalogue"):
        _run("catalogue", catalogue=bad, downloads=tmp_path)


def test_builtin_catalogue_entries_are_well_formed():
    entries = builtin_entries()
    assert len(entries) == len(BUILTIN)
    assert len({e.import_step.slug for e in entries}) == len(entries)
    unregistered = sorted({e.import_step.format for e in entries} - set(IMPORTERS))
    assert not unregistered, f"formats not registered: {unregistered}"
    for entry in entries:
        importer = IMPORTERS[entry.import_step.format]
        splits = getattr(importer, "SPLITS", None)
        assert (entry.import_step.split is None) == (splits is None) or entry.import_step.split in (splits or ()), (
            entry.name
        )
        assert entry.homepage.startswith("https://") and entry.licence and entry.title
        assert not entry.import_step.references_hidden  # no built-in source ships references its authors withhold
        for source in (*entry.files, *(entry.media.files if entry.media else ())):
            url = urlsplit(source.url)
            assert url.scheme == "https" or (url.scheme == "http" and url.hostname in HTTP_ONLY_HOSTS), source.url
            assert source.provenance.strip(), source.name
            if source.sha256 is None:
                assert source.size is None and "not known" in source.provenance, source.name
            else:
                assert re.fullmatch(r"[0-9a-f]{64}", source.sha256) and source.size and source.size > 0
            if url.hostname == "raw.githubusercontent.com":
                assert re.fullmatch(r"/[^/]+/[^/]+/[0-9a-f]{40}/.+", url.path), f"not pinned to a commit: {source.url}"
                assert source.sha256 is not None, f"a pinned GitHub file has known bytes: {source.url}"
            if url.hostname == "huggingface.co":
                assert re.search(r"/resolve/[0-9a-f]{40}/", url.path), f"not pinned to a revision: {source.url}"


def test_a_download_of_unknown_size_past_the_configured_cap_stops_and_keeps_nothing(tmp_path, sources, settings):
    data = (sources / "msvd-eval.zip").read_bytes()
    settings.CAPBENCH_FETCH_MAX_BYTES = len(data) - 1
    downloads = tmp_path / "downloads"
    for send_length in (True, False):
        with range_server({"msvd-eval.zip": data}, send_length=send_length) as served:
            url = f"{served.base}/msvd-eval.zip"
            entry = _entry("unsized", [_file(sources / "msvd-eval.zip", url, extract=["*.json"], sha256=None)])
            catalogue = _catalogue(tmp_path, [entry])
            with pytest.raises(CommandError, match=r"gives no size for msvd-eval\.zip.*CAPBENCH_FETCH_MAX_BYTES"):
                _run("fetch", "unsized", "--accept-unverified", catalogue=catalogue, downloads=downloads)
        assert [path for path in downloads.rglob("*") if path.is_file()] == []
    assert not Dataset.objects.filter(slug="unsized").exists()
    settings.CAPBENCH_FETCH_MAX_BYTES = len(data)  # at the cap: fetched
    with range_server({"msvd-eval.zip": data}, send_length=False) as served:
        entry = _entry(
            "unsized",
            [_file(sources / "msvd-eval.zip", f"{served.base}/msvd-eval.zip", extract=["*.json"], sha256=None)],
        )
        _run("fetch", "unsized", "--accept-unverified", catalogue=_catalogue(tmp_path, [entry]), downloads=downloads)
    assert Dataset.objects.filter(slug="unsized").exists()


@pytest.mark.parametrize("member", [".", "x" * 300 + ".json"], ids=["dot", "long"])
def test_an_archive_member_with_a_bad_name_is_refused_naming_the_archive_and_member(tmp_path, sources, member):
    archive = _zip(sources / "odd.zip", {"MSVD-Eval.json": _msvd_eval_json(), member: b"x"})
    catalogue = _catalogue(tmp_path, [_entry("odd", [_file(archive, extract=["*"])], path="MSVD-Eval.json")])
    downloads = tmp_path / "downloads"
    with pytest.raises(CommandError) as error:
        _run("fetch", "odd", catalogue=catalogue, downloads=downloads)
    assert f"{downloads / 'odd' / 'odd.zip'}: member {repr(member)[:40]}" in str(error.value)
    assert "the archive is refused" in str(error.value)
    everything = sorted(str(path.relative_to(downloads)) for path in downloads.rglob("*"))
    assert everything == ["odd", "odd/odd.zip", "odd/odd.zip.sha256"]  # nothing unpacked, nothing beside the folder
    assert not Dataset.objects.filter(slug="odd").exists()
