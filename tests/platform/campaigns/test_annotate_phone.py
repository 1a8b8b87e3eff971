"""The annotation page on a phone (390 × 844, a touch screen): the picture, the caption, every
rubric dimension and Send are on about one screen, Send is on the first screen without scrolling,
and no keyboard hints are shown (there is no keyboard); on a desktop the hints are shown. The page
fits the phone's width. The first screen is kept in test-artifacts/browser/annotate-phone.png."""

from __future__ import annotations

import hashlib
import struct
import zlib

import pytest

from catalog.models import Media
from plumbing import storage
from tests.platform.factories import PASSWORD

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PHONE = {"width": 390, "height": 844}


def _photo(width: int, height: int) -> bytes:
    """A grey PNG the size of a photo: the picture takes the room a real one would."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def _photos_stored(dataset, tmp_path) -> None:
    content = _photo(500, 375)  # Flickr8k's usual size
    path = tmp_path / "photo.png"
    path.write_bytes(content)
    sha256 = hashlib.sha256(content).hexdigest()
    stored = storage.put_path(f"{sha256[:2]}/{sha256}.png", path)
    Media.objects.filter(dataset=dataset).update(stored_path=stored, sha256=sha256, width=500, height=375)


def _log_in(page, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_load_state()


def test_on_a_phone_send_is_on_the_first_screen_and_no_key_hints_are_shown(
    live_server, browser_page, make_campaign, make_user, artefacts, demo_pictures, tmp_path
):
    _photos_stored(demo_pictures, tmp_path)
    campaign = make_campaign(gold_rate=0)
    make_user("ann")
    url = f"{live_server.url}/campaigns/{campaign.slug}/annotate/"
    phone = browser_page.context.browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = phone.new_page()
    _log_in(page, live_server.url, "ann")
    page.goto(url)
    page.wait_for_load_state("networkidle")
    # The first screen as the phone shows it (a full-page capture drops the touch emulation).
    page.screenshot(path=str(artefacts / "annotate-phone.png"))
    send = page.locator("#send").bounding_box()
    assert send is not None and send["y"] + send["height"] <= PHONE["height"], send  # on the first screen
    # Without the bar that keeps Send in reach, the whole form is still about one screen long.
    page.add_style_tag(content=".annotation .choices { position: static !important; }")
    bottom = page.evaluate("document.getElementById('send').getBoundingClientRect().bottom + window.scrollY")
    assert bottom <= 1.25 * PHONE["height"], bottom
    picture = page.locator(".task-media img").bounding_box()
    assert picture is not None and picture["height"] >= 150, picture  # shown, at a size one can judge
    assert all(not hint.is_visible() for hint in page.locator(".keys").all())
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    # A rating is chosen by tapping its value.
    page.locator("fieldset[data-dimension=accuracy] label").nth(3).tap()
    assert page.locator("input[name=dim-accuracy][value='4']").is_checked()
    phone.close()

    _log_in(browser_page, live_server.url, "ann")  # a desktop with a mouse and a keyboard
    browser_page.goto(url)
    assert browser_page.locator("#progress .keys").is_visible()
