"""Safe extraction: only the members asked for, nothing outside the destination, no links out."""

from __future__ import annotations

import io
import tarfile
import zipfile

import pytest

from catalog.fetching import extract as extracting
from catalog.fetching.errors import FetchError
from catalog.fetching.extract import extract


def _zip(path, members: dict[str, bytes]):
    with zipfile.ZipFile(path, "w") as bundle:
        for name, data in members.items():
            bundle.writestr(name, data)
    return path


def _tar(path, members: dict[str, bytes], links: dict[str, str] | None = None):
    with tarfile.open(path, "w:gz") as bundle:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            bundle.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            bundle.addfile(info)
    return path


def test_zip_extracts_only_the_selected_members(tmp_path):
    archive = _zip(tmp_path / "a.zip", {"top/wanted.json": b"{}", "top/other.txt": b"x"})
    written = extract(archive, tmp_path / "out", ("*/wanted.json",))
    assert written == [tmp_path / "out" / "top" / "wanted.json"]
    assert not (tmp_path / "out" / "top" / "other.txt").exists()


def test_tar_gz_extracts_and_keeps_links_inside_unextracted(tmp_path):
    archive = _tar(tmp_path / "a.tar.gz", {"d/x.jpg": b"jpeg"}, links={"d/alias.jpg": "x.jpg"})
    written = extract(archive, tmp_path / "out", ("*.jpg",))
    assert written == [tmp_path / "out" / "d" / "x.jpg"]


@pytest.mark.parametrize("name", ["../evil", "a/../../evil", "/etc/evil"])
def test_members_leading_outside_refuse_the_archive(tmp_path, name):
    for archive in (
        _zip(tmp_path / "a.zip", {"ok.txt": b"1", name: b"2"}),
        _tar(tmp_path / "a.tgz", {"ok.txt": b"1", name: b"2"}),
    ):
        with pytest.raises(FetchError, match="refused"):
            extract(archive, tmp_path / "out", ("ok.txt",))
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "evil").exists()


def test_links_pointing_outside_refuse_the_archive(tmp_path):
    archive = _tar(tmp_path / "a.tgz", {"ok.txt": b"1"}, links={"d/escape": "../../outside"})
    with pytest.raises(FetchError, match="links outside"):
        extract(archive, tmp_path / "out", ("*",))
    archive = _tar(tmp_path / "b.tgz", {"ok.txt": b"1"}, links={"abs": "/etc/passwd"})
    with pytest.raises(FetchError, match="absolute"):
        extract(archive, tmp_path / "out", ("*",))


def test_members_over_the_size_limit_refuse_the_archive(tmp_path, monkeypatch):
    monkeypatch.setattr(extracting, "MAX_MEMBER_BYTES", 10)
    archive = _zip(tmp_path / "a.zip", {"big.bin": b"x" * 11})
    with pytest.raises(FetchError, match="over the 10-byte limit"):
        extract(archive, tmp_path / "out", ("*",))


def test_no_matching_member_and_not_an_archive_are_errors(tmp_path):
    archive = _zip(tmp_path / "a.zip", {"x.txt": b"1"})
    with pytest.raises(FetchError, match="no member matches"):
        extract(archive, tmp_path / "out", ("*.json",))
    plain = tmp_path / "plain.txt"
    plain.write_text("hello")
    with pytest.raises(FetchError, match="not a zip or tar"):
        extract(plain, tmp_path / "out", ("*",))


def test_members_named_with_a_leading_dot_slash_are_read_by_their_own_name(tmp_path):
    archive = tmp_path / "dotted.tar.gz"
    with tarfile.open(archive, "w:gz") as tarred:
        payload = b'{"ok": true}'
        info = tarfile.TarInfo("./d/a.json")
        info.size = len(payload)
        tarred.addfile(info, io.BytesIO(payload))
    written = extract(archive, tmp_path / "out", ("d/*.json",))
    assert [path.read_bytes() for path in written] == [b'{"ok": true}']


def test_a_damaged_archive_is_a_plain_error(tmp_path):
    archive = tmp_path / "broken.zip"
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w") as zipped:
        zipped.writestr("a.txt", "x" * 1000)
    archive.write_bytes(good.read_bytes()[:-30])  # the central directory cut short
    with pytest.raises(FetchError, match="not a zip or tar archive|damaged"):
        extract(archive, tmp_path / "out", ("*",))


def test_members_that_unpack_far_beyond_the_archive_are_refused(tmp_path):
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("zeros.bin", b"\0" * (80 << 20))  # 80 MiB of zeros: a few dozen KB compressed
    with pytest.raises(FetchError, match="budget"):
        extract(archive, tmp_path / "out", ("*.bin",))
    assert not (tmp_path / "out" / "zeros.bin").exists()


def _tar_named(path, name: str, *, kind: bytes = tarfile.REGTYPE, linkname: str = "", data: bytes = b"data"):
    """A tar whose one member is called `name` exactly (a PAX header carries it, NUL and all)."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as bundle:
        info = tarfile.TarInfo("placeholder")
        info.type, info.linkname = kind, linkname
        info.size = len(data) if kind == tarfile.REGTYPE else 0
        info.pax_headers = {"path": name}
        bundle.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    return path


def _everything_under(folder) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


REFUSED_NAMES = {
    "dot": (".", "no name"),
    "dot in a dot": ("./.", "no name"),
    "empty": ("", "no name"),
    "long component": ("x" * 300 + ".json", "path component over 200 bytes"),
    "long component in a folder": ("d/" + "y" * 300, "path component over 200 bytes"),
    "long path": ("d/" * 600 + "a.json", "name over 1,024 bytes"),
    "newline": ("a\nb.json", "control character"),
    "escape": ("a\x1b[2Jb.json", "control character"),
    "nul": ("a\x00b.json", "control character"),
    "traversal": ("d/../../evil.json", r"leads outside the archive's folder \('\.\.'\)"),
    "absolute": ("/tmp/evil.json", "absolute path"),
}


@pytest.mark.parametrize("case", REFUSED_NAMES, ids=list(REFUSED_NAMES))
def test_a_member_with_a_bad_name_refuses_the_archive_naming_both(tmp_path, case):
    name, reason = REFUSED_NAMES[case]
    destination = tmp_path / "entry"
    destination.mkdir()  # as in `datasets fetch`: the entry folder holds the archive and what it unpacks
    archive = _tar_named(destination / "a.tar", name)
    before = _everything_under(tmp_path)
    with pytest.raises(FetchError, match=reason) as error:
        extract(archive, destination, ("*", ".", ""))
    message = str(error.value)
    assert message.startswith(f"{archive}: member ")
    assert "the archive is refused" in message
    assert repr(name)[:40] in message  # the member, escaped and cut short where long
    assert _everything_under(tmp_path) == before  # nothing written, inside the entry folder or beside it


@pytest.mark.parametrize("name", [".", "x" * 300, "a\tb.json"], ids=["dot", "long", "tab"])
def test_zip_members_are_checked_the_same_way(tmp_path, name):
    destination = tmp_path / "entry"
    destination.mkdir()
    archive = _zip(destination / "a.zip", {name: b"data"})
    with pytest.raises(FetchError, match="the archive is refused"):
        extract(archive, destination, ("*", "."))
    assert _everything_under(tmp_path) == ["entry", "entry/a.zip"]


def test_the_archive_root_folder_is_no_member_to_refuse(tmp_path):
    archive = tmp_path / "rooted.tar"
    with tarfile.open(archive, "w") as bundle:  # what `tar -C folder -cf rooted.tar .` writes first
        root = tarfile.TarInfo(".")
        root.type = tarfile.DIRTYPE
        bundle.addfile(root)
        info = tarfile.TarInfo("./d/a.json")
        info.size = 2
        bundle.addfile(info, io.BytesIO(b"{}"))
    assert extract(archive, tmp_path / "out", ("*",)) == [tmp_path / "out" / "d" / "a.json"]


@pytest.mark.parametrize("kind", [tarfile.SYMTYPE, tarfile.LNKTYPE], ids=["symbolic", "hard"])
def test_links_whose_target_has_a_control_character_or_no_name_are_refused(tmp_path, kind):
    for target in ("a\nb", ""):
        archive = _tar_named(tmp_path / "a.tar", "d/alias", kind=kind, linkname=target)
        with pytest.raises(FetchError, match="d/alias.*the archive is refused"):
            extract(archive, tmp_path / "out", ("*",))
    assert not (tmp_path / "out").exists()


def test_a_member_that_cannot_be_written_is_a_plain_error_and_leaves_no_partial_file(tmp_path):
    destination = tmp_path / "entry"
    (destination / "taken.json").mkdir(parents=True)  # a folder where the member's file would go
    archive = _zip(tmp_path / "a.zip", {"taken.json": b"{}"})
    with pytest.raises(FetchError, match=r"a\.zip: member 'taken\.json' cannot be written to .*nothing of it was kept"):
        extract(archive, destination, ("*.json",))
    assert _everything_under(destination) == ["taken.json"]
