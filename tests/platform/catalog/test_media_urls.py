"""Media by URL: addresses recorded at import, pictures shown from the stored file or the publisher's
address, workers and `datasets media fetch` downloading into the store with the sha256 pinned."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from PIL import Image

from catalog.fetching.errors import FetchError
from catalog.importers.media_urls import coco_image_url, image_url
from catalog.models import Caption, Media
from catalog.pictures import picture_of, showable_q
from catalog.services.media_urls import media_fetch, media_fetch_all
from scoring.services.rows import caption_rows
from tests.platform.catalog.range_server import range_server

pytestmark = pytest.mark.django_db


def _png(width: int, height: int, shade: int = 90) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (shade, shade, shade)).save(out, format="PNG")
    return out.getvalue()


@pytest.fixture
def by_url(demo_dataset, settings, tmp_path):
    """The demo's first three media given addresses on a local stand-in for an image host."""
    settings.MEDIA_ROOT = tmp_path / "store"
    settings.CAPBENCH_DOWNLOADS_DIR = tmp_path / "downloads"
    media = list(Media.objects.filter(dataset=demo_dataset).order_by("name")[:3])
    files = {m.name: _png(40 + i, 30, 60 + i) for i, m in enumerate(media)}
    with range_server(files) as served:
        settings.CAPBENCH_MEDIA_HOSTS = [served.base.removeprefix("http://"), "images.cocodataset.org"]
        for m in media:
            Media.objects.filter(pk=m.pk).update(url=f"{served.base}/{m.name}")
        yield demo_dataset, [Media.objects.get(pk=m.pk) for m in media], served


def test_coco_addresses_come_from_the_file_name_or_the_entry():
    assert coco_image_url("COCO_val2014_000000000974.jpg") == (
        "http://images.cocodataset.org/val2014/COCO_val2014_000000000974.jpg"
    )
    assert coco_image_url("000000000974.jpg") == ""  # a 2017 name does not say its split
    assert coco_image_url("COCO_val2014_974.jpg") == ""
    given = "https://s3.amazonaws.com/nocaps/val/0013ea2087020901.jpg"
    assert image_url("0013ea2087020901.jpg", {"coco_url": given}) == given
    assert image_url("COCO_val2014_000000000974.jpg", {"coco_url": "javascript:alert(1)"}).startswith("http://images")


def test_thumb_import_records_each_image_address(tmp_path):
    from catalog.importers.registry import read_bundle

    (tmp_path / "mscoco_THumB-1.0.jsonl").write_text(
        '{"SYS": "Up-Down", "seg_id": "974", "set_id": 5, "hyp": "A group of people on an elephant.", '
        '"image": "COCO_val2014_000000000974.jpg", "P": 4.0, "R": 3.0, "Fl": -0.0, "Inc": -0.0, "Con": -0.0, '
        '"human_score": 3.5}\n'
    )
    (tmp_path / "mscoco_references.json").write_text('{"seg_id": "974", "set_id": 5, "refs": ["People ride."]}\n')
    bundle = read_bundle("thumb", tmp_path)
    assert [(m.name, m.url) for m in bundle.media] == [
        ("COCO_val2014_000000000974.jpg", "http://images.cocodataset.org/val2014/COCO_val2014_000000000974.jpg")
    ]


def test_a_picture_is_the_stored_file_else_an_allowed_address(by_url, settings):
    _, media, served = by_url
    shown = picture_of(media[0])
    assert shown is not None
    assert shown.src == f"{served.base}/{media[0].name}"
    assert shown.remote
    allowed = settings.CAPBENCH_MEDIA_HOSTS
    assert Media.objects.filter(showable_q(), pk=media[0].pk).exists()
    settings.CAPBENCH_MEDIA_HOSTS = ["127.0.0.1"]  # the host, but at its default port only
    assert picture_of(Media.objects.get(pk=media[0].pk)) is None
    assert not Media.objects.filter(showable_q(), pk=media[0].pk).exists()
    with pytest.raises(FetchError, match="not an address on an allowed image host"):
        media_fetch(Media.objects.get(pk=media[0].pk))  # nothing is downloaded from a host not allowed
    assert served.requests == []
    settings.CAPBENCH_MEDIA_HOSTS = allowed
    stored = media_fetch(Media.objects.get(pk=media[0].pk))
    shown = picture_of(stored)
    assert shown is not None
    assert shown.src == reverse("catalog:media-file", args=[stored.pk])
    assert not shown.remote
    assert (shown.width, shown.height) == (40, 30)


def test_the_first_fetch_pins_the_checksum_and_a_changed_file_is_refused(by_url, settings):
    _, media, served = by_url
    first = media_fetch(Media.objects.get(pk=media[1].pk))
    assert first.sha256
    assert first.size_bytes == len(served.files[media[1].name])
    Media.objects.filter(pk=first.pk).update(stored_path="")  # the stored copy lost
    served.files[media[1].name] = _png(10, 10, 200)  # and the publisher now serves other bytes
    with pytest.raises(FetchError, match="checksum mismatch"):
        media_fetch(Media.objects.get(pk=first.pk))
    again = Media.objects.get(pk=first.pk)
    assert again.stored_path == ""
    assert again.sha256 == first.sha256


def test_the_command_fetches_every_address_and_names_what_failed(by_url):
    dataset, media, served = by_url
    del served.files[media[2].name]  # one address answers 404
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 of 3 media could not be downloaded"):
        call_command("datasets", "media", "fetch", dataset.slug, stdout=out)
    assert "stored 2 files" in out.getvalue()
    assert media[2].name in out.getvalue()
    served.files[media[2].name] = _png(5, 5)
    call_command("datasets", "media", "fetch", dataset.slug, stdout=io.StringIO())
    assert Media.objects.filter(pk__in=[m.pk for m in media], stored_path="").count() == 0
    outcome = media_fetch_all(dataset)
    assert outcome.stored == []
    assert outcome.already_stored == 3


def test_a_worker_fetches_a_caption_s_picture_by_address(by_url):
    _, media, _ = by_url
    caption = Caption.objects.filter(item__media=media[0]).first()
    (row,) = caption_rows([caption.pk])
    assert row.row.media is not None
    assert Image.open(row.row.media).size == (40, 30)
    assert row.media_sha256 == Media.objects.get(pk=media[0].pk).sha256
    (text_only,) = caption_rows([caption.pk], media=False)
    assert text_only.row.media is None


def test_a_page_shows_the_address_with_no_referrer_and_the_csp_allows_its_host(fresh_page_memory, by_url, client):
    dataset, media, served = by_url
    item = media[0].items.first()
    page = client.get(reverse("leaderboards:item", args=[dataset.slug, item.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert f'src="{served.base}/{media[0].name}"' in html
    assert 'referrerpolicy="no-referrer"' in html
    assert 'loading="eager"' in html  # the page's own subject: not left unloaded below a phone's fold
    csp = client.get("/").headers["Content-Security-Policy"]
    assert "http://images.cocodataset.org" in csp  # the default hosts (the policy is built at start-up)


def test_what_is_not_an_image_or_too_large_is_never_stored(by_url, settings):
    _, media, served = by_url
    served.files[media[0].name] = b"<html>not a picture</html>"
    with pytest.raises(FetchError, match="not an image"):
        media_fetch(Media.objects.get(pk=media[0].pk))
    settings.CAPBENCH_MEDIA_MAX_BYTES = 20
    with pytest.raises(FetchError, match="larger than 20 bytes"):
        media_fetch(Media.objects.get(pk=media[1].pk))
    assert Media.objects.filter(pk__in=[media[0].pk, media[1].pk], stored_path="").count() == 2


def test_a_redirect_to_a_host_not_allowed_is_not_followed(by_url, settings):
    from catalog.fetching.by_url import fetch_to

    with range_server({}) as elsewhere:
        settings.CAPBENCH_MEDIA_HOSTS = ["127.0.0.1:1"]
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Redirect(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (the http.server API)
                self.send_response(302)
                self.send_header("Location", f"{elsewhere.base}/secret")
                self.end_headers()

            def log_message(self, *args):
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            allowed = lambda url: url.startswith(f"http://127.0.0.1:{server.server_address[1]}/")  # noqa: E731
            with pytest.raises(FetchError, match="not an allowed image host"):
                fetch_to(
                    f"http://127.0.0.1:{server.server_address[1]}/x.jpg",
                    settings.CAPBENCH_DOWNLOADS_DIR / "x.part",
                    allowed=allowed,
                    max_bytes=1000,
                )
        finally:
            server.shutdown()
        assert elsewhere.requests == []
