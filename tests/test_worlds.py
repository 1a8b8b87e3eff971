"""Kept worlds (tests/worlds.py): a world copied back is the world its build made (rows, ids, files,
what it returned), and anything the build could read differently builds it again."""

from __future__ import annotations

import pytest
from django.core.files.storage import storages
from django.core.management import call_command
from django.db import connection, transaction

from catalog.models import Item
from tests import worlds
from tests.platform.factories import DatasetFactory, ItemFactory, UserFactory

pytestmark = pytest.mark.django_db

# Text COPY writes with escapes (tab, newline, backslash) or as it is (Unicode's line separators).
AWKWARD = "a\tb\nc\\d\u2028e\x1cf\u0085g"


@pytest.fixture(autouse=True)
def _worlds_kept_here():
    if not worlds.keeping():
        pytest.skip("worlds are kept only with a superuser's connection and a folder for a file store")


def _build():
    """A user, a dataset and a stored file."""
    stored = storages["default"].save("kept-world/notes.txt", _content())
    dataset = DatasetFactory(slug="kept-dataset", title=f"Kept {AWKWARD}")
    ItemFactory(dataset=dataset, external_id="awkward", references=[AWKWARD], metadata={"note": AWKWARD})
    return {
        "owner": UserFactory(username="kept-owner"),
        "dataset": dataset,
        "stored": stored,
        "numbers": (1, 2.5, None),
    }


def _content():
    from django.core.files.base import ContentFile

    return ContentFile(b"what the build wrote")


def _in_a_test_of_its_own(name: str, build=_build, inputs: object = ()):
    """kept() as a test would call it, undone after as each test's transaction is: what it returned,
    every row it left, and the stored file's content."""
    with transaction.atomic():
        made = worlds.kept(name, build, inputs=inputs)
        rows = worlds._rows()
        stored = storages["default"].open(made["stored"]).read()
        transaction.set_rollback(True)
    storages["default"].delete(made["stored"])
    return made, rows, stored


def test_a_world_copied_back_is_the_world_built(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "store"
    before = worlds._rows()
    built, built_rows, built_file = _in_a_test_of_its_own("probe")
    assert worlds._rows() == before  # (undone)
    copied, copied_rows, copied_file = _in_a_test_of_its_own("probe")
    assert worlds.COUNTS["probe built"] == 1
    assert worlds.COUNTS["probe copied"] == 1
    assert copied_rows == built_rows
    assert copied_file == built_file
    assert copied["owner"].pk == built["owner"].pk
    assert copied["owner"].check_password("a long test password")
    assert copied["dataset"] == built["dataset"]
    assert copied["numbers"] == (1, 2.5, None)


def test_text_copy_writes_with_escapes_or_as_it_is_comes_back_the_same(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "store"
    _in_a_test_of_its_own("awkward")
    with transaction.atomic():
        made = worlds.kept("awkward", _build)
        item = Item.objects.get(dataset=made["dataset"])
        assert made["dataset"].title == f"Kept {AWKWARD}"
        assert item.references == [AWKWARD]
        assert item.metadata == {"note": AWKWARD}
        transaction.set_rollback(True)
    assert worlds.COUNTS["awkward copied"] == 1


def test_rows_made_after_a_copied_world_take_new_ids_even_where_a_sequence_went_back(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "store"
    _in_a_test_of_its_own("ids")
    with connection.cursor() as cursor:  # (as a flush that restarts the sequences would)
        cursor.execute("SELECT setval(pg_get_serial_sequence('catalog_dataset', 'id'), 1, false)")
    with transaction.atomic():
        made = worlds.kept("ids", _build)
        later = DatasetFactory(slug="made-after")
        assert later.pk > made["dataset"].pk
        transaction.set_rollback(True)
    assert worlds.COUNTS["ids copied"] == 1


def test_a_different_start_builds_again(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "store"
    _in_a_test_of_its_own("start")
    DatasetFactory(slug="already-here")
    _in_a_test_of_its_own("start")
    assert worlds.COUNTS["start built"] == 2


def test_other_inputs_or_settings_build_again(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "store"
    _in_a_test_of_its_own("inputs", inputs=["bleu_4"])
    _in_a_test_of_its_own("inputs", inputs=["bleu_4", "cider_d"])
    settings.CAPBENCH_SUBMISSIONS_CONCURRENT = 99
    _in_a_test_of_its_own("inputs", inputs=["bleu_4", "cider_d"])
    assert worlds.COUNTS["inputs built"] == 3
    assert worlds.COUNTS["inputs copied"] == 0


def test_a_world_returns_rows_and_plain_values_only(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "store"
    for _ in range(2):  # (nothing kept the first time)
        with pytest.raises(TypeError, match="rows and plain values, not object"):
            worlds.kept("odd", lambda: {"thing": object()})
    assert worlds.COUNTS["odd built"] == 2


def test_a_file_the_store_had_before_and_lost_since_builds_it_again(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "store"
    first = storages["default"].save("kept-world/first.txt", _content())
    _in_a_test_of_its_own("lost")
    _in_a_test_of_its_own("lost")
    storages["default"].delete(first)
    _in_a_test_of_its_own("lost")
    assert worlds.COUNTS["lost built"] == 2
    assert worlds.COUNTS["lost copied"] == 1


@pytest.mark.django_db(transaction=True)
def test_a_world_is_copied_back_on_committed_rows_too(settings, tmp_path):
    """A transactional test's world: built on committed rows, emptied as the flush after a test
    empties the database, then copied back and committed."""
    settings.MEDIA_ROOT = tmp_path / "store"
    call_command("flush", interactive=False, verbosity=0)  # (from the rows the next test starts with)
    built = worlds.kept("committed", _build)
    built_rows = worlds._rows()
    call_command("flush", interactive=False, verbosity=0)  # (what follows each transactional test)
    copied = worlds.kept("committed", _build)
    assert worlds.COUNTS["committed copied"] == 1
    assert worlds._rows() == built_rows
    assert copied["dataset"].pk == built["dataset"].pk
    assert not connection.in_atomic_block  # (committed: nothing left open)
