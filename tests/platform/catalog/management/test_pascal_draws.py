"""Pascal-50S's K reference draws for `manage.py reproduce pascal50s`: one generator per draw,
each pair its own sample (two pairs of one image do not get the same five references), and the
same seed the same draw."""

import random

from catalog.importers.bundle import CaptionKey, PairRow
from catalog.management.pascal import draw_references


def _pairs(count: int) -> list[PairRow]:
    key = CaptionKey(item="img.jpg", system="s")
    return [PairRow(external_id=str(n), item="img.jpg", caption_a=key, caption_b=key) for n in range(count)]


def test_each_pair_of_a_draw_gets_its_own_sample_and_a_seed_repeats_the_draw():
    pool = {"img.jpg": [f"reference {n}" for n in range(50)]}
    pairs = _pairs(20)
    first = draw_references(random.Random(12345), pool, pairs)
    assert all(len(set(refs)) == 5 and set(refs) <= set(pool["img.jpg"]) for refs in first)
    assert len({tuple(refs) for refs in first}) > 15  # not one sample repeated for every pair
    assert draw_references(random.Random(12345), pool, pairs) == first
    assert draw_references(random.Random(12346), pool, pairs) != first
