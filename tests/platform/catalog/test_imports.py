"""Storing datasets in PostgreSQL: counts, idempotence, atomicity and the export round trip."""

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import DataError

from catalog.importers import canonical
from catalog.importers.registry import read_bundle
from catalog.models import Caption, Dataset, ImportRecord, Item, Judgment, Media, PairJudgment, System
from catalog.services.exports import dataset_bundle
from catalog.services.imports import dataset_import

pytestmark = pytest.mark.django_db


def _table_counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (Dataset, Media, Item, System, Caption, Judgment, PairJudgment)
    }


def _run(*args) -> str:
    out = io.StringIO()
    call_command("datasets", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_flickr8k_expert_counts_in_the_database(judgment_data):
    summary = _run("import", "flickr8k-expert", str(judgment_data / "flickr8k"))
    dataset = Dataset.objects.get(slug="flickr8k-expert")
    assert Caption.objects.filter(item__dataset=dataset).count() == 5664
    assert Judgment.objects.filter(caption__item__dataset=dataset).count() == 16992
    assert Item.objects.filter(dataset=dataset).count() == 1000
    assert "rows excluded self reference: 158" in summary
    assert "time:" in summary


@pytest.mark.slow  # the whole of Flickr8k-CF, twice
def test_flickr8k_cf_counts_and_reimport_is_idempotent(judgment_data):
    first = _run("import", "flickr8k-cf", str(judgment_data / "flickr8k"))
    counts = _table_counts()
    ids = set(Caption.objects.values_list("id", flat=True))
    second = _run("import", "flickr8k-cf", str(judgment_data / "flickr8k"))
    assert counts["Caption"] == 47830
    assert counts["Judgment"] == 47830
    assert _table_counts() == counts
    assert set(Caption.objects.values_list("id", flat=True)) == ids
    assert "imported" in first
    assert "unchanged" in second
    assert list(ImportRecord.objects.order_by("id").values_list("changed", flat=True)) == [True, False]


def test_pascal_and_msvd_counts(judgment_data):
    _run("import", "pascal50s", str(judgment_data / "pascal50s"))
    _run("import", "msvd-eval", str(judgment_data / "msvd_eval"))
    pascal = Dataset.objects.get(slug="pascal50s")
    assert PairJudgment.objects.filter(dataset=pascal).count() == 4000
    assert set(PairJudgment.objects.values_list("category", flat=True)) == {"HC", "HI", "HM", "MM"}
    assert all(len(refs) == 50 for refs in Item.objects.filter(dataset=pascal).values_list("references", flat=True))
    msvd = Dataset.objects.get(slug="msvd-eval")
    assert msvd.modality == "video"
    assert Judgment.objects.filter(caption__item__dataset=msvd).count() == 394 * 4


@pytest.mark.slow  # over 5 s of CPU (issue 40)
def test_export_import_export_is_identical(judgment_data, tmp_path):
    _run("import", "flickr8k-expert", str(judgment_data / "flickr8k"))
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _run("export", "flickr8k-expert", "--format", "jsonl", "-o", str(first))
    _run("import", "canonical", str(first), "--slug", "expert-copy")
    _run("export", "expert-copy", "--format", "jsonl", "-o", str(second))
    a, b = first.read_text().splitlines(), second.read_text().splitlines()
    assert json.loads(a[0])["slug"] == "flickr8k-expert"
    assert json.loads(b[0])["slug"] == "expert-copy"
    assert a[1:] == b[1:]
    assert len(a) == 1 + 1 + 1000 + 1000 + 5664 + 16992
    copy, original = Dataset.objects.get(slug="expert-copy"), Dataset.objects.get(slug="flickr8k-expert")
    assert copy.content_sha256 == original.content_sha256


def test_stored_content_has_the_source_fingerprint(judgment_data):
    bundle = read_bundle("msvd-eval", judgment_data / "msvd_eval")
    outcome = dataset_import(bundle=bundle, source_path="x")
    assert dataset_bundle(dataset=outcome.dataset).fingerprint() == bundle.fingerprint()


def test_broken_file_leaves_the_database_unchanged(judgment_data, tmp_path):
    _run("import", "msvd-eval", str(judgment_data / "msvd_eval"))
    before = _table_counts()
    lines = (judgment_data / "flickr8k" / "ExpertAnnotations.txt").read_text().splitlines(keepends=True)
    lines[4000] = lines[4000].replace("\t1\t", "\tseven\t", 1) if "\t1\t" in lines[4000] else "x\ty\n"
    (tmp_path / "ExpertAnnotations.txt").write_text("".join(lines))
    (tmp_path / "Flickr8k.token.txt").write_text((judgment_data / "flickr8k" / "Flickr8k.token.txt").read_text())
    with pytest.raises(CommandError, match=r"nothing was imported: .*ExpertAnnotations.txt, line 4001"):
        _run("import", "flickr8k-expert", str(tmp_path))
    assert _table_counts() == before
    assert not Dataset.objects.filter(slug="flickr8k-expert").exists()


def test_failure_while_storing_rolls_everything_back(judgment_data):
    bundle = read_bundle("msvd-eval", judgment_data / "msvd_eval")
    bundle.judgments[-1].dimension = "x" * 100  # longer than the column: fails at the very end
    with pytest.raises(DataError, match="too long"):
        dataset_import(bundle=bundle, source_path="x")
    assert _table_counts() == dict.fromkeys(_table_counts(), 0)


def test_changed_content_updates_in_place_and_removes_stale_rows(judgment_data, tmp_path):
    bundle = read_bundle("msvd-eval", judgment_data / "msvd_eval")
    dataset_import(bundle=bundle, source_path="v1")
    kept = Caption.objects.get(item__external_id=bundle.items[1].external_id)
    dropped = bundle.items[0].external_id
    bundle.media = [m for m in bundle.media if m.name != bundle.items[0].media]
    bundle.items.pop(0)
    bundle.captions.pop(0)
    bundle.judgments = bundle.judgments[8:]
    bundle.captions[0].text = "an edited candidate"
    outcome = dataset_import(bundle=bundle, source_path="v2")
    assert outcome.changed and outcome.removed == {"judgment": 8, "caption": 1, "item": 1, "media": 1}
    assert not Item.objects.filter(external_id=dropped).exists()
    kept.refresh_from_db()
    assert kept.text == "an edited candidate"
    assert Caption.objects.count() == 196
    assert Judgment.objects.count() == 196 * 8


def test_submitted_captions_survive_a_reimport(judgment_data):
    bundle = read_bundle("msvd-eval", judgment_data / "msvd_eval")
    outcome = dataset_import(bundle=bundle, source_path="v1")
    item = Item.objects.get(dataset=outcome.dataset, external_id=bundle.items[0].external_id)
    mine = System.objects.create(dataset=outcome.dataset, slug="mine", name="Mine", kind="submission")
    Caption.objects.create(item=item, system=mine, text="my caption")
    bundle.items.pop(0)
    bundle.captions.pop(0)
    bundle.judgments = bundle.judgments[8:]
    dataset_import(bundle=bundle, source_path="v2")
    assert Caption.objects.filter(system=mine).count() == 1
    assert Item.objects.filter(pk=item.pk).exists()


def test_unknown_format_and_missing_path_are_clear(tmp_path):
    with pytest.raises(CommandError, match="not found"):
        _run("import", "msvd-eval", str(tmp_path / "nothing-here"))
    with pytest.raises(CommandError, match=r"no dataset 'ghost'"):
        _run("export", "ghost")


def test_canonical_export_to_stdout(judgment_data, capsys):
    _run("import", "msvd-eval", str(judgment_data / "msvd_eval"))
    buffer = io.StringIO()
    canonical.write(dataset_bundle(dataset=Dataset.objects.get()), buffer)
    assert buffer.getvalue().count("\n") == 1 + 1 + 197 + 197 + 197 + 1576


def test_slug_and_title_name_the_dataset_without_changing_its_content(repo_root):
    demo = repo_root / "demo" / "flickr8k-expert"
    summary = _run("import", "flickr8k-expert", str(demo), "--slug", "demo", "--title", "Demo slice")
    dataset = Dataset.objects.get(slug="demo")
    assert dataset.title == "Demo slice"
    assert "demo: imported" in summary
    assert "unchanged" in _run("import", "flickr8k-expert", str(demo), "--slug", "demo", "--title", "Renamed")
    dataset.refresh_from_db()
    assert dataset.title == "Renamed"
    assert Caption.objects.filter(item__dataset=dataset).count() == 602
