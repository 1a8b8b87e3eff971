"""Every table of every page sits in a focusable scroll region (static/capbench.css gives it the
shadow that shows more is to the side): on a phone, or a board wider than the page, the table
scrolls inside its box by touch, mouse or keyboard, and the page itself is never wider than the
screen. Read from the templates, so a new table without its region fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REGION = re.compile(
    r'<div class="scroll[^"]*"(?=[^>]*role="region")(?=[^>]*tabindex="0")(?=[^>]*aria-label="[^"]+")[^>]*>$'
)


def tables(repo_root: Path):
    for path in sorted((repo_root / "templates").rglob("*.html")):
        text = path.read_text()
        for found in re.finditer(r"<table\b", text):
            yield path.relative_to(repo_root), text[: found.start()].rstrip()


def test_every_table_is_in_a_focusable_scroll_region(repo_root):
    found = list(tables(repo_root))
    assert len(found) > 20  # the pages' tables were read
    bare = [f"{path}:{before.count(chr(10)) + 1}" for path, before in found if not REGION.search(before[-300:])]
    assert bare == []


@pytest.mark.django_db
def test_a_rendered_page_has_its_table_in_the_region(client):
    page = client.get("/metrics/all/").content.decode()
    assert re.search(
        r'<div class="scroll" role="region" tabindex="0" aria-label="All metrics \(scrolls sideways\)">\s*<table[^>]*id="metric-index"',
        page,
    )
