"""Downloads: resume with Range, restart on a 200, verify size and sha256, stamps, file:// URLs."""

from __future__ import annotations

import hashlib
import io

import pytest

from catalog.fetching import download as downloading
from catalog.fetching.download import download, part_path, present, stamp_path
from catalog.fetching.entries import SourceFile
from catalog.fetching.errors import FetchError
from tests.platform.catalog.range_server import range_server

BODY = bytes(range(256)) * 4096  # 1 MiB
SHA = hashlib.sha256(BODY).hexdigest()


def _source(url: str, *, sha256: str | None = SHA, size: int | None = len(BODY)) -> SourceFile:
    return SourceFile(name="data.bin", url=url, size=size, sha256=sha256, provenance="test")


def test_file_url_download_verifies_renames_and_stamps(tmp_path):
    origin = tmp_path / "origin.bin"
    origin.write_bytes(BODY)
    folder = tmp_path / "downloads"
    result = download(_source(origin.as_uri()), folder)
    assert (folder / "data.bin").read_bytes() == BODY
    assert not part_path(folder / "data.bin").exists()
    assert result.verified and result.received == len(BODY) and result.sha256 == SHA
    assert stamp_path(folder / "data.bin").read_text() == f"{SHA}  {len(BODY)}\n"
    assert present(_source(origin.as_uri()), folder) == SHA
    again = download(_source(origin.as_uri()), folder)
    assert again.already_present and again.received == 0


def test_file_url_resume_seeks_past_the_part_file(tmp_path):
    origin = tmp_path / "origin.bin"
    origin.write_bytes(BODY)
    folder = tmp_path / "downloads"
    folder.mkdir()
    part_path(folder / "data.bin").write_bytes(BODY[:1000])
    result = download(_source(origin.as_uri()), folder)
    assert result.resumed_from == 1000
    assert result.received == len(BODY) - 1000
    assert (folder / "data.bin").read_bytes() == BODY


def test_http_resume_reads_only_the_remainder(tmp_path):
    folder = tmp_path / "downloads"
    folder.mkdir()
    part_path(folder / "data.bin").write_bytes(BODY[:300_000])
    with range_server({"data.bin": BODY}) as served:
        result = download(_source(f"{served.base}/data.bin"), folder)
    assert served.bytes_sent == len(BODY) - 300_000
    assert served.requests == [("/data.bin", "bytes=300000-", 206)]
    assert result.resumed_from == 300_000
    assert (folder / "data.bin").read_bytes() == BODY


def test_http_200_answer_to_a_range_request_starts_over(tmp_path):
    folder = tmp_path / "downloads"
    folder.mkdir()
    part_path(folder / "data.bin").write_bytes(b"stale bytes of some other file")
    with range_server({"data.bin": BODY}, honour_range=False) as served:
        result = download(_source(f"{served.base}/data.bin"), folder)
    assert served.requests[0][1:] == ("bytes=30-", 200)
    assert (folder / "data.bin").read_bytes() == BODY and result.verified


def test_checksum_mismatch_removes_the_part_file_and_names_both_sums(tmp_path):
    folder = tmp_path / "downloads"
    wrong = "0" * 64
    with range_server({"data.bin": BODY}) as served:
        url = f"{served.base}/data.bin"
        with pytest.raises(FetchError) as error:
            download(_source(url, sha256=wrong), folder)
    message = str(error.value)
    assert url in message
    assert wrong in message
    assert SHA in message
    assert not part_path(folder / "data.bin").exists()
    assert not (folder / "data.bin").exists()


def test_size_mismatch_is_refused(tmp_path):
    origin = tmp_path / "origin.bin"
    origin.write_bytes(BODY)
    with pytest.raises(FetchError, match="more than the catalogue's 5 bytes"):
        download(_source(origin.as_uri(), size=5), tmp_path / "downloads")


def test_unverified_file_needs_the_flag_and_reports_its_sum(tmp_path):
    origin = tmp_path / "origin.bin"
    origin.write_bytes(BODY)
    source = _source(origin.as_uri(), sha256=None, size=None)
    with pytest.raises(FetchError, match="--accept-unverified"):
        download(source, tmp_path / "downloads")
    assert not (tmp_path / "downloads").exists()
    result = download(source, tmp_path / "downloads", accept_unverified=True)
    assert result.sha256 == SHA and not result.verified


def test_transient_http_errors_are_retried_then_reported(tmp_path, monkeypatch):
    pauses = []
    monkeypatch.setattr(downloading, "sleep", pauses.append)
    with range_server({}) as served, pytest.raises(FetchError, match="HTTP 404"):  # 404: not retried
        download(_source(f"{served.base}/missing.bin"), tmp_path)
    assert pauses == []
    with range_server({}, unavailable=("busy.bin",)) as served, pytest.raises(FetchError, match="gave up after 6"):
        download(_source(f"{served.base}/busy.bin"), tmp_path)  # 503: retried
    assert pauses == list(downloading.RETRY_DELAYS)
    assert len(served.requests) == 6


def test_failures_no_retry_can_mend_are_reported_at_once(tmp_path, monkeypatch):
    pauses = []
    monkeypatch.setattr(downloading, "sleep", pauses.append)
    with pytest.raises(FetchError, match="Connection refused"):
        download(_source("http://127.0.0.1:9/nothing-listens-here"), tmp_path)
    with pytest.raises(FetchError, match="cannot connect"):
        download(_source("http://no-such-host.invalid/file.bin"), tmp_path)  # DNS: not retried
    assert pauses == []


def test_present_file_with_wrong_content_is_downloaded_again(tmp_path):
    origin = tmp_path / "origin.bin"
    origin.write_bytes(BODY)
    folder = tmp_path / "downloads"
    folder.mkdir()
    (folder / "data.bin").write_bytes(b"corrupted")
    lines = []
    result = download(_source(origin.as_uri()), folder, say=lines.append)
    assert result.received == len(BODY)
    assert "downloading again" in lines[0]


def test_progress_prints_plain_lines_when_not_a_terminal(tmp_path):
    origin = tmp_path / "origin.bin"
    origin.write_bytes(BODY)
    stream = io.StringIO()
    download(_source(origin.as_uri()), tmp_path / "downloads", progress=stream)
    lines = stream.getvalue().splitlines()
    assert lines and "\r" not in stream.getvalue()
    assert lines[-1].startswith("data.bin: 1.0 MiB of 1.0 MiB (100.0 %)")
    assert lines[-1].endswith("/s")


CAP = 256 * 1024  # a quarter of BODY


def _unsized(url: str) -> SourceFile:
    return _source(url, sha256=None, size=None)


@pytest.mark.parametrize("send_length", [True, False], ids=["with Content-Length", "without Content-Length"])
def test_a_file_of_unknown_size_is_cut_off_at_the_cap_and_nothing_is_kept(tmp_path, send_length):
    folder = tmp_path / "downloads"
    with range_server({"data.bin": BODY}, send_length=send_length) as served:
        url = f"{served.base}/data.bin"
        with pytest.raises(FetchError, match=r"over|arrived") as error:
            download(_unsized(url), folder, accept_unverified=True, max_bytes=CAP)
    message = str(error.value)
    assert url in message
    assert "gives no size for data.bin" in message
    assert f"the {CAP:,}-byte cap (CAPBENCH_FETCH_MAX_BYTES)" in message
    assert "nothing of it was kept" in message
    assert (f"the server declares {len(BODY):,} bytes" in message) == send_length
    assert list(folder.rglob("*")) == []


def test_a_local_file_of_unknown_size_and_a_resumed_one_are_capped_too(tmp_path):
    origin = tmp_path / "origin.bin"
    origin.write_bytes(BODY)
    folder = tmp_path / "downloads"
    with pytest.raises(FetchError, match="byte cap"):
        download(_unsized(origin.as_uri()), folder, accept_unverified=True, max_bytes=CAP)
    assert list(folder.rglob("*")) == []
    part_path(folder / "data.bin").write_bytes(BODY[:1000])  # an earlier try, resumed: 1000 + the rest
    with range_server({"data.bin": BODY}) as served, pytest.raises(FetchError, match="byte cap"):
        download(_unsized(f"{served.base}/data.bin"), folder, accept_unverified=True, max_bytes=CAP)
    assert served.requests == [("/data.bin", "bytes=1000-", 206)]
    assert list(folder.rglob("*")) == []


def test_a_file_of_unknown_size_within_the_cap_arrives(tmp_path):
    with range_server({"data.bin": BODY}, send_length=False) as served:
        result = download(_unsized(f"{served.base}/data.bin"), tmp_path, accept_unverified=True, max_bytes=len(BODY))
    assert result.size == len(BODY)
    assert result.sha256 == SHA
    assert (tmp_path / "data.bin").read_bytes() == BODY
