"""Captioner benchmarks (COCO Captions, Karpathy splits, nocaps, MSR-VTT, MSVD) on hand-written files
of the real shapes (tests/fixtures/datasets/<format>/)."""

import io
import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from catalog.importers.coco_style import read_coco
from catalog.importers.errors import ImportFormatError
from catalog.importers.registry import read_bundle
from catalog.models import Caption, Dataset, Item, Media, System

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "datasets"


def _run(*args) -> str:
    out = io.StringIO()
    call_command("datasets", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def _assert_benchmark(bundle, *, modality: str = "image") -> None:
    assert bundle.info.kind == "benchmark"
    assert bundle.info.modality == modality
    assert bundle.info.dimensions == []
    assert bundle.info.rating_scale == {}
    assert not bundle.systems and not bundle.captions and not bundle.judgments and not bundle.pairs
    assert all(item.references for item in bundle.items)
    assert [media.name for media in bundle.media] == [item.media for item in bundle.items]
    assert all(media.kind == ("video" if modality == "video" else "image") for media in bundle.media)
    for field in ("title", "description", "citation", "licence", "url", "protocol_notes"):
        assert getattr(bundle.info, field), field


def _edited(tmp_path: Path, source: Path, edit) -> Path:
    """A copy of a fixture folder with one JSON file changed by `edit(document)`."""
    folder = tmp_path / source.parent.name
    shutil.copytree(source.parent, folder)
    document = json.loads(source.read_text())
    edit(document)
    (folder / source.name).write_text(json.dumps(document))
    return folder / source.name


# COCO Captions


def test_coco_captions_items_references_in_annotation_id_order():
    bundle = read_bundle("coco-captions", FIXTURES / "coco-captions")
    _assert_benchmark(bundle)
    assert bundle.info.slug == "coco-captions-val2014"
    assert [item.external_id for item in bundle.items] == ["391895", "522418", "184613", "318219"]
    assert [len(item.references) for item in bundle.items] == [5, 5, 6, 5]
    first = bundle.items[0]
    assert first.media == "COCO_val2014_000000391895.jpg"
    assert first.references[0] == "a man riding a bike down a dirt road"
    assert first.references[1] == "A man riding a bike down a dirt road in the afternoon."
    # The file's "  seen from the side \n" is whitespace-normalised.
    assert first.references[3] == "A man riding a bike down a dirt road seen from the side"


def test_coco_style_unknown_image_id_names_the_annotation(tmp_path):
    source = FIXTURES / "coco-captions" / "captions_val2014.json"
    edited = _edited(tmp_path, source, lambda d: d["annotations"][12].update(image_id=999))
    with pytest.raises(ImportFormatError) as error:
        read_coco(edited)
    assert error.value.field == "annotations[12].image_id"
    assert "999" in error.value.message


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d["images"][2].update(id=d["images"][0]["id"]), "images[2].id"),
        (lambda d: d["annotations"][5].update(id=d["annotations"][1]["id"]), "annotations[5].id"),
        (lambda d: d["annotations"][3].update(caption="  "), "annotations[3].caption"),
        (lambda d: d["images"][1].pop("file_name"), "images[1].file_name"),
        (lambda d: d.pop("images"), "images"),
    ],
)
def test_coco_style_shape_errors_are_located(tmp_path, edit, field):
    edited = _edited(tmp_path, FIXTURES / "coco-captions" / "captions_val2014.json", edit)
    with pytest.raises(ImportFormatError) as error:
        read_bundle("coco-captions", edited)
    assert error.value.field == field


def test_coco_captions_image_without_caption_is_refused(tmp_path):
    def drop_first_image_captions(document):
        first = document["images"][0]["id"]
        document["annotations"] = [a for a in document["annotations"] if a["image_id"] != first]

    edited = _edited(tmp_path, FIXTURES / "coco-captions" / "captions_val2014.json", drop_first_image_captions)
    with pytest.raises(ImportFormatError, match="has no caption") as error:
        read_bundle("coco-captions", edited)
    assert error.value.field == "images[0]"


# Karpathy splits


def test_karpathy_default_is_the_test_split():
    bundle = read_bundle("karpathy", FIXTURES / "karpathy")
    _assert_benchmark(bundle)
    assert bundle.info.slug == "coco-karpathy-test"
    assert [item.external_id for item in bundle.items] == ["391895", "184613", "554625"]
    assert bundle.items[0].media == "COCO_val2014_000000391895.jpg"  # the filepath (val2014/) is dropped
    assert bundle.items[0].references[2] == "Some people near object 15"  # raw, whitespace-normalised
    assert all(len(item.references) == 5 for item in bundle.items)
    assert bundle.report["images_in_other_splits"] == 5


@pytest.mark.parametrize(
    ("split", "ids"),
    [
        ("val", ["522418", "397133"]),
        ("train", ["9", "25"]),
        ("restval", ["318219"]),
        ("test", ["391895", "184613", "554625"]),
    ],
)
def test_karpathy_each_split(split, ids):
    bundle = read_bundle("karpathy", FIXTURES / "karpathy" / "dataset_coco.json", split=split)
    assert bundle.info.slug == f"coco-karpathy-{split}"
    assert [item.external_id for item in bundle.items] == ids


def test_karpathy_flickr30k_ids_are_file_stems():
    bundle = read_bundle("karpathy", FIXTURES / "karpathy" / "dataset_flickr30k.json")
    _assert_benchmark(bundle)
    assert bundle.info.slug == "flickr30k-karpathy-test"
    assert [(item.external_id, item.media) for item in bundle.items] == [
        ("1007129816", "1007129816.jpg"),
        ("101362133", "101362133.jpg"),
    ]


def test_karpathy_unknown_split_names_the_known_ones():
    with pytest.raises(ImportFormatError) as error:
        read_bundle("karpathy", FIXTURES / "karpathy", split="dev")
    assert error.value.field == "split"
    assert "test, val, train, restval" in error.value.message


def test_karpathy_split_absent_from_the_file_is_an_error():
    with pytest.raises(
        ImportFormatError, match=r"no image has split 'restval' \(this file has: test 2, train 2, val 1\)"
    ):
        read_bundle("karpathy", FIXTURES / "karpathy" / "dataset_flickr30k.json", split="restval")


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d["images"][4].update(split="holdout"), "images[4].split"),
        (lambda d: d["images"][6].update(cocoid=d["images"][0]["cocoid"]), "images[6].cocoid"),
        (lambda d: d["images"][2]["sentences"][1].pop("raw"), "images[2].sentences[1].raw"),
        (lambda d: d["images"][3].update(sentences=[]), "images[3].sentences"),
        (lambda d: d.update(dataset="coco2017"), "dataset"),
    ],
)
def test_karpathy_shape_errors_are_located(tmp_path, edit, field):
    edited = _edited(tmp_path, FIXTURES / "karpathy" / "dataset_coco.json", edit)
    with pytest.raises(ImportFormatError) as error:
        read_bundle("karpathy", edited)
    assert error.value.field == field


# nocaps


def test_nocaps_val_keeps_each_image_domain():
    bundle = read_bundle("nocaps", FIXTURES / "nocaps")
    _assert_benchmark(bundle)
    assert bundle.info.slug == "nocaps-val"
    assert [item.external_id for item in bundle.items] == ["0", "1", "2", "3", "4", "5"]
    assert [item.metadata for item in bundle.items][:4] == [
        {"domain": "in-domain"},
        {"domain": "near-domain"},
        {"domain": "near-domain"},
        {"domain": "out-domain"},
    ]
    assert all(len(item.references) == 10 for item in bundle.items)
    assert bundle.items[0].references[3] == "A picture 0 showing something novel, description 3."
    assert bundle.report == {"images_in_domain": 2, "images_near_domain": 3, "images_out_domain": 1}


def test_nocaps_test_image_info_is_refused_as_withheld():
    with pytest.raises(ImportFormatError, match="withhold|keep for their evaluation server") as error:
        read_bundle("nocaps", FIXTURES / "nocaps" / "nocaps_test_image_info.json")
    assert error.value.field == "annotations"


def test_nocaps_unknown_domain_is_located(tmp_path):
    edited = _edited(
        tmp_path, FIXTURES / "nocaps" / "nocaps_val_4500_captions.json", lambda d: d["images"][3].update(domain="far")
    )
    with pytest.raises(ImportFormatError) as error:
        read_bundle("nocaps", edited)
    assert error.value.field == "images[3].domain"


# MSR-VTT


def test_msrvtt_default_test_split_from_the_folder():
    bundle = read_bundle("msrvtt", FIXTURES / "msrvtt")
    _assert_benchmark(bundle, modality="video")
    assert bundle.info.slug == "msrvtt-test"
    assert [(item.external_id, item.media) for item in bundle.items] == [
        ("video7010", "video7010.mp4"),
        ("video7011", "video7011.mp4"),
        ("video7012", "video7012.mp4"),
    ]
    # sen_id order, not file order; whitespace-normalised
    assert bundle.items[0].references == [f"someone explains topic {k} of video7010" for k in (3, 2, 1, 0)]


@pytest.mark.parametrize(("split", "count"), [("train", 4), ("validate", 2)])
def test_msrvtt_train_and_validate_come_from_the_train_val_file(split, count):
    bundle = read_bundle("msrvtt", FIXTURES / "msrvtt", split=split)
    assert bundle.info.slug == f"msrvtt-{split}"
    assert len(bundle.items) == count
    assert all(len(item.references) == 3 for item in bundle.items)
    assert bundle.report["videos_in_other_splits"] == 6 - count


def test_msrvtt_split_missing_from_the_given_file():
    with pytest.raises(ImportFormatError, match=r"no video has split 'test' \(this file has: train 4, validate 2\)"):
        read_bundle("msrvtt", FIXTURES / "msrvtt" / "train_val_videodatainfo.json")


def test_msrvtt_sentence_of_an_unknown_video_is_located(tmp_path):
    edited = _edited(
        tmp_path, FIXTURES / "msrvtt" / "test_videodatainfo.json", lambda d: d["sentences"][5].update(video_id="video1")
    )
    with pytest.raises(ImportFormatError) as error:
        read_bundle("msrvtt", edited)
    assert error.value.field == "sentences[5].video_id"


# MSVD


@pytest.mark.parametrize(
    ("split", "ids"),
    [("test", ["vid1301", "vid1302", "vid1970"]), ("val", ["vid1201"]), ("train", ["vid1", "vid2", "vid1200"])],
)
def test_msvd_standard_split_by_mapping_number(split, ids):
    bundle = read_bundle("msvd", FIXTURES / "msvd", split=split)
    _assert_benchmark(bundle, modality="video")
    assert bundle.info.slug == f"msvd-{split}"
    assert [item.external_id for item in bundle.items] == ids
    assert bundle.report == {"clips_in_other_splits": 7 - len(ids), "described_clips_not_in_mapping": 1}


def test_msvd_items_name_the_clip_and_keep_every_description():
    bundle = read_bundle("msvd", FIXTURES / "msvd")
    first = bundle.items[0]
    assert first.media == "-Cv5LsqKUXc_17_25.avi"
    assert first.metadata == {"clip": "-Cv5LsqKUXc_17_25"}
    assert first.references == [f"A man is doing activity {k} in clip vid1301." for k in range(3)] + [
        "a woman slices an onion"
    ]


def test_msvd_mapping_clip_without_description_is_located(tmp_path):
    folder = tmp_path / "msvd"
    shutil.copytree(FIXTURES / "msvd", folder)
    with (folder / "youtube_mapping.txt").open("a") as handle:
        handle.write("nodescription_1_5 vid1500\n")
    with pytest.raises(ImportFormatError, match="no description") as error:
        read_bundle("msvd", folder)
    assert error.value.path.endswith("youtube_mapping.txt")
    assert error.value.line == 8


def test_msvd_mapping_number_outside_the_standard_split_is_located(tmp_path):
    folder = tmp_path / "msvd"
    shutil.copytree(FIXTURES / "msvd", folder)
    (folder / "youtube_mapping.txt").write_text("-4wsuPCjDBc_5_15 vid1971\n")
    with pytest.raises(ImportFormatError) as error:
        read_bundle("msvd", folder)
    assert (error.value.line, error.value.field) == (1, "vid")


# In the database


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fmt", "path", "split", "slug", "items"),
    [
        ("coco-captions", "coco-captions", None, "coco-captions-val2014", 4),
        ("karpathy", "karpathy", "val", "coco-karpathy-val", 2),
        ("nocaps", "nocaps", None, "nocaps-val", 6),
        ("msrvtt", "msrvtt", None, "msrvtt-test", 3),
        ("msvd", "msvd", None, "msvd-test", 3),
    ],
)
def test_benchmark_import_export_round_trip(tmp_path, fmt, path, split, slug, items):
    _run("import", fmt, str(FIXTURES / path), *(["--split", split] if split else []))
    dataset = Dataset.objects.get(slug=slug)
    assert dataset.kind == "benchmark"
    assert dataset.dimensions == []
    assert dataset.rating_scale == {}
    assert Item.objects.filter(dataset=dataset).count() == items
    assert Media.objects.filter(dataset=dataset).count() == items
    assert not System.objects.filter(dataset=dataset).exists()
    exported = tmp_path / "export.jsonl"
    _run("export", slug, "--format", "jsonl", "-o", str(exported))
    _run("import", "canonical", str(exported), "--slug", "copy")
    copy = Dataset.objects.get(slug="copy")
    assert copy.kind == "benchmark"
    assert copy.content_sha256 == dataset.content_sha256
    assert Item.objects.filter(dataset=copy).count() == items
    if fmt == "nocaps":
        assert set(Item.objects.filter(dataset=copy).values_list("metadata__domain", flat=True)) == {
            "in-domain",
            "near-domain",
            "out-domain",
        }


@pytest.mark.django_db
def test_bad_file_stores_nothing(tmp_path):
    edited = _edited(
        tmp_path, FIXTURES / "karpathy" / "dataset_coco.json", lambda d: d["images"][7].update(split="holdout")
    )
    with pytest.raises(CommandError, match=r"images\[7\]\.split"):
        _run("import", "karpathy", str(edited))
    assert not Dataset.objects.exists()
    assert not Item.objects.exists()


@pytest.mark.django_db
def test_unknown_split_on_the_command_line_names_the_known_ones():
    with pytest.raises(CommandError, match=r"unknown split 'dev' for msrvtt \(known: test, validate, train\)"):
        _run("import", "msrvtt", str(FIXTURES / "msrvtt"), "--split", "dev")
    assert not Dataset.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_imported_benchmark_accepts_a_submission(captioner):
    from submissions.services import MethodInfo, submission_create

    _run("import", "coco-captions", str(FIXTURES / "coco-captions"))
    dataset = Dataset.objects.get(slug="coco-captions-val2014")
    # As COCO results files write it: the image id as an integer.
    results = [
        {"image_id": int(item.external_id), "caption": "a photo"} for item in Item.objects.filter(dataset=dataset)
    ]
    submission = submission_create(
        owner=captioner,
        dataset=dataset,
        file_name="captions_val2014_results.json",
        content=json.dumps(results).encode(),
        method=MethodInfo("Show and Tell", "an LSTM captioner"),
    )
    assert submission.caption_count == 4
    assert Caption.objects.filter(system=submission.system, item__dataset=dataset).count() == 4
