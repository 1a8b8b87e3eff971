"""Polaris, Nebula, FOIL, Composite and VATEX-EVAL on hand-written fixtures of the real shapes
(tests/fixtures/datasets/<format>/): counts, the protocol, located errors, the canonical round trip."""

import io
import json
import os
import pickle
import random
import re
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from scipy import stats

from capbench_eval.metaeval.pairwise import pairwise_accuracy
from capbench_eval.metrics import get
from catalog.importers.errors import ImportFormatError
from catalog.importers.judgment_rows import judgment_rows
from catalog.importers.registry import read_bundle
from catalog.models import Caption, Dataset, Item, Judgment, Media, PairJudgment, System

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "datasets"


def _run(*args) -> str:
    out = io.StringIO()
    call_command("datasets", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def _table_counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (Dataset, Media, Item, System, Caption, Judgment, PairJudgment)
    }


def _copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(FIXTURES / name, target)
    return target


# Polaris and Nebula


def test_polaris_counts_and_protocol():
    bundle = read_bundle("polaris", FIXTURES / "polaris")
    assert bundle.info.slug == "polaris"
    assert bundle.info.kind == "rating"
    assert bundle.counts() == {"systems": 1, "media": 3, "items": 4, "captions": 6, "judgments": 6, "pairs": 0}
    assert {j.dimension for j in bundle.judgments} == {"overall"}
    assert [j.value for j in bundle.judgments] == [0.75, 0.0, 1.0, 0.5, 0.875, 0.625]
    # The image whose second record names other references becomes a second item.
    assert bundle.report == {"images": 3, "images_with_several_reference_lists": 1}
    second = next(item for item in bundle.items if item.external_id == "dog_park.jpg#2")
    assert second.media == "dog_park.jpg"
    assert second.references == ["a dog running on the grass.", "two dogs play"]
    first = next(item for item in bundle.items if item.external_id == "dog_park.jpg")
    assert first.references[2] == "a puppy's run in the park"
    # A quoted multi-line candidate is one caption, whitespace-normalised; the index column is named.
    assert bundle.captions[2].text == "a red bus drives down a city street"
    assert bundle.warnings == [f"{FIXTURES / 'polaris' / 'polaris_test.csv'}: columns not imported: (unnamed)"]


def test_polaris_split_chooses_the_file_and_the_slug():
    bundle = read_bundle("polaris", FIXTURES / "polaris", split="val")
    assert bundle.info.slug == "polaris-val"
    assert len(bundle.captions) == 2
    with pytest.raises(ImportFormatError, match="polaris_train.csv: file not found"):
        read_bundle("polaris", FIXTURES / "polaris", split="train")


def test_nebula_counts():
    bundle = read_bundle("nebula", FIXTURES / "nebula")
    assert bundle.counts() == {"systems": 1, "media": 3, "items": 3, "captions": 4, "judgments": 4, "pairs": 0}
    assert all(len(item.references) == 5 for item in bundle.items)
    assert bundle.info.rating_scale == {"min": 0, "max": 1}


@pytest.mark.parametrize(
    ("replace", "line", "field"),
    [
        ("0.95,000000005678.jpg", 4, "score"),  # 1.95 is out of 0-1
        ("\"['a giraffe eating", 4, "refs"),  # not a list literal
    ],
)
def test_nebula_bad_record_is_located(tmp_path, replace, line, field):
    folder = _copy("nebula", tmp_path)
    source = folder / "nebula_test.csv"
    text = source.read_text()
    if field == "score":
        text = text.replace(replace, "1.95,000000005678.jpg")
    else:
        lines = text.splitlines(keepends=True)
        lines[3] = lines[3].replace(replace, "\"__import__('os').system('true') + ['a giraffe eating", 1)
        text = "".join(lines)
    source.write_text(text)
    with pytest.raises(ImportFormatError) as error:
        read_bundle("nebula", folder)
    assert (error.value.line, error.value.field) == (line, field)


def test_polos_csv_missing_column_is_named(tmp_path):
    (tmp_path / "nebula_test.csv").write_text("mt,refs,imgid\na,\"['b']\",c.jpg\n")
    with pytest.raises(ImportFormatError, match=r"line 1: field 'score': missing \(also read as: score, human_score\)"):
        read_bundle("nebula", tmp_path)


def test_nebula_as_a_json_list_and_polaris_under_its_cards_column_names(tmp_path):
    """Nebula's `[{imgid, mt, refs, score}]` and the dataset cards' `cand`/`human_score`/`img` read
    like the authors' CSV: the same items, captions and judgments."""
    records = [
        {"imgid": "a.jpg", "mt": "a dog runs", "refs": ["a dog", "a brown dog"], "score": 0.75},
        {"imgid": "a.jpg", "mt": "a cat", "refs": ["a dog", "a brown dog"], "score": 0.25},
        {"imgid": "b.jpg", "mt": "two birds", "refs": ["birds on a wire"], "score": 1.0},
    ]
    (tmp_path / "nebula_test.json").write_text(json.dumps(records))
    from_json = read_bundle("nebula", tmp_path)
    assert (from_json.counts()["items"], from_json.counts()["captions"], from_json.counts()["judgments"]) == (2, 3, 3)
    assert [j.value for j in from_json.judgments] == [0.75, 0.25, 1.0]
    cards = tmp_path / "cards"
    cards.mkdir()
    rows = "".join(f'{r["mt"]},"{r["refs"]!r}",{r["score"]},{r["imgid"]}\n' for r in records)
    (cards / "polaris_test.csv").write_text("cand,refs,human_score,img\n" + rows)
    from_cards = read_bundle("polaris", cards)
    assert [(c.text, j.value) for c, j in zip(from_cards.captions, from_cards.judgments, strict=True)] == [
        (c.text, j.value) for c, j in zip(from_json.captions, from_json.judgments, strict=True)
    ]
    records[1]["score"] = "high"
    (tmp_path / "nebula_test.json").write_text(json.dumps(records))
    with pytest.raises(ImportFormatError) as error:
        read_bundle("nebula", tmp_path)
    assert error.value.field == "[1].score"


# FOIL


@pytest.fixture(scope="module")
def foil():
    return read_bundle("foil", FIXTURES / "foil")


def test_foil_pairs_each_foil_with_its_original(foil):
    assert foil.info.kind == "foil"
    assert foil.counts() == {"systems": 2, "media": 2, "items": 3, "captions": 7, "judgments": 0, "pairs": 4}
    texts = {caption.key: caption.text for caption in foil.captions}
    assert [pair.external_id for pair in foil.pairs] == ["101-9002", "101-9003", "202-9005", "303-9007"]
    assert all(pair.winner == "a" and pair.category == "" for pair in foil.pairs)
    assert all(
        pair.caption_a.system == "coco-original" and pair.caption_b.system == "foil-captions" for pair in foil.pairs
    )
    first = foil.pairs[0]
    assert (texts[first.caption_a], texts[first.caption_b]) == (
        "A dog sitting on a wooden bench.",
        "A cat sitting on a wooden bench.",
    )
    assert foil.items[0].metadata == {
        "image_id": 42,
        "foils": {
            "9002": {"target_word": "dog", "foil_word": "cat"},
            "9003": {"target_word": "dog", "foil_word": "horse"},
        },
    }


def test_foil_references_exclude_the_original_and_pairs_keep_one(foil):
    """4 refs = the image's COCO captions minus the pair's original; 1 ref = the first of them."""
    by_id = {item.external_id: item for item in foil.items}
    assert by_id["101"].references == [
        "A brown dog on a bench in a park.",
        "A small dog rests in the park.",
        "A dog sits outside on a bench.",
        "A puppy relaxing on a park bench.",
    ]
    # Another original of the same image is a reference of this one.
    assert by_id["202"].references[0] == "A dog sitting on a wooden bench."
    assert all(len(item.references) == 4 for item in foil.items)
    for pair in foil.pairs:
        assert pair.references == by_id[pair.item].references[:1]


def test_a_metric_preferring_caption_a_is_always_right_on_foil(foil):
    a = [1.0] * len(foil.pairs)
    b = [0.0] * len(foil.pairs)
    result = pairwise_accuracy(a, b, [pair.winner for pair in foil.pairs])
    assert (result.strict, result.ties, result.pairs) == (1.0, 0, 4)
    flipped = pairwise_accuracy(b, a, [pair.winner for pair in foil.pairs])
    assert flipped.strict == 0.0


def test_reproduce_foil_computes_the_1_ref_and_4_ref_settings_against_the_paper():
    """The fixture's 4 pairs are not the paper's test set: every line is printed, then the command
    fails naming the values that differ (a reproduction is judged, never only shown)."""
    out = io.StringIO()
    with pytest.raises(CommandError, match="differ from the papers"):
        call_command(
            "reproduce", "foil", str(FIXTURES / "foil"), "--metrics", "rouge_l", "--replicates", "20", stdout=out
        )
    lines = [line for line in out.getvalue().splitlines() if line.startswith("rouge_l")]
    assert [line.split()[1] for line in lines] == ["1-ref", "4-ref"]
    assert [line.split()[7] for line in lines] == ["71.7", "79.3"]  # CLIPScore Table 5
    assert "published: Hessel et al., CLIPScore (EMNLP 2021), Table 5" in out.getvalue()


def test_foil_group_with_two_originals_is_located(tmp_path):
    folder = _copy("foil", tmp_path)
    source = folder / "foilv1.0_test_2017.json"
    source.write_text(source.read_text().replace('"foil": true', '"foil": false', 1))
    with pytest.raises(ImportFormatError, match="annotation id 101 has 2 original captions") as error:
        read_bundle("foil", folder)
    assert error.value.field == "annotations[0].id"


def test_foil_needs_the_coco_captions(tmp_path):
    folder = _copy("foil", tmp_path)
    (folder / "captions_val2014.json").unlink()
    with pytest.raises(ImportFormatError, match="captions_val2014.json: file not found"):
        read_bundle("foil", folder)


# Composite


@pytest.fixture(scope="module")
def composite():
    return read_bundle("composite", FIXTURES / "composite")


def test_composite_counts_and_protocol(composite):
    assert composite.info.dimensions == ["correctness", "thoroughness"]
    assert composite.counts() == {"systems": 3, "media": 5, "items": 5, "captions": 15, "judgments": 30, "pairs": 0}
    assert Counter(j.dimension for j in composite.judgments) == {"correctness": 15, "thoroughness": 15}
    assert Counter(item.metadata["source"] for item in composite.items) == {"flickr8k": 2, "flickr30k": 1, "coco": 2}
    assert composite.report == {
        "human_caption_matched_exactly": 4,
        "human_caption_matched_nearest": 1,
        "fourth_caption_dropped": 3,
        "flickr8k_blank_records_skipped": 1,
    }
    item = composite.items[0]
    ratings = [
        j.value for j in composite.judgments if j.caption.item == item.external_id and j.dimension == "correctness"
    ]
    assert ratings == [5.0, 4.0, 3.0]


def test_composite_removes_the_rated_human_caption_from_the_references(composite):
    texts = {caption.key: caption.text for caption in composite.captions}
    for item in composite.items:
        human = next(text for key, text in texts.items() if key.item == item.external_id and key.system.endswith("-1"))
        assert len(item.references) == 4
        assert human.lower().rstrip(" .") not in [ref.lower().rstrip(" .") for ref in item.references]
    cake = next(item for item in composite.items if item.media == "COCO_val2014_000000522418.jpg")
    assert "A woman wearing a net on her head cutting a cake." not in cake.references  # the nearest match


def test_composite_without_thoroughness_files_has_one_dimension(tmp_path):
    folder = _copy("composite", tmp_path)
    for file in folder.glob("*_throughness.csv"):
        file.unlink()
    bundle = read_bundle("composite", folder)
    assert bundle.info.dimensions == ["correctness"]
    assert len(bundle.judgments) == 15


def test_composite_names_the_missing_reference_file(tmp_path):
    folder = _copy("composite", tmp_path)
    (folder / "dataset_flickr30k.json").unlink()
    with pytest.raises(ImportFormatError, match="Karpathy's flickr30k captions"):
        read_bundle("composite", folder)


def test_composite_bad_rating_is_located(tmp_path):
    folder = _copy("composite", tmp_path)
    source = folder / "coco_correctness.csv"
    source.write_text(source.read_text().replace('"5";"5";"3";"2"', '"5";"7";"3";"2"'))
    with pytest.raises(ImportFormatError) as error:
        read_bundle("composite", folder)
    assert (Path(error.value.path).name, error.value.line, error.value.field) == (
        "coco_correctness.csv",
        2,
        "Answer.Q2Answer",
    )


# VATEX-EVAL


def test_vatex_eval_counts_and_annotators():
    bundle = read_bundle("vatex-eval", FIXTURES / "vatex-eval")
    assert bundle.info.modality == "video"
    assert bundle.counts() == {"systems": 1, "media": 3, "items": 3, "captions": 6, "judgments": 18, "pairs": 0}
    assert all(media.kind == "video" and media.name.endswith(".mp4") for media in bundle.media)
    assert all(len(item.references) == 9 for item in bundle.items)
    # human_scores.pkl is annotator-major: the second candidate's ratings are [1], [7], [13].
    second = [j for j in bundle.judgments if j.caption.external_id == "r2"]
    assert [(j.annotator, j.value) for j in second] == [
        ("annotator_1", 3.0),
        ("annotator_2", 3.0),
        ("annotator_3", 2.0),
    ]


class _Marker:
    """A pickle that would create a file if anything ran its reduce."""

    def __init__(self, target: Path):
        self.target = target

    def __reduce__(self):
        return (os.system, (f"touch {self.target}",))


def test_reproduce_vatex_eval_averages_the_annotators_correlations():
    out = io.StringIO()
    call_command(
        "reproduce", "vatex-eval", str(FIXTURES / "vatex-eval"), "--metrics", "bleu_1", "--replicates", "20", stdout=out
    )  # fmt: skip
    printed = out.getvalue()
    assert "published: none here" in printed
    bundle = read_bundle("vatex-eval", FIXTURES / "vatex-eval")

    table = judgment_rows(bundle)
    scores = np.round(get("bleu_1").score(table.rows).scores, 4)  # every candidate once: one corpus
    who = np.asarray(table.annotators)
    expected = np.mean(
        [stats.kendalltau(scores[who == a], table.human[who == a]).statistic for a in sorted(set(table.annotators))]
    )
    line = next(line for line in printed.splitlines() if line.startswith("bleu_1") and " tau_b " in line)
    assert float(line.split()[3]) == pytest.approx(100 * expected, abs=0.005)


def test_vatex_eval_refuses_a_pickle_that_runs_code(tmp_path):
    folder = _copy("vatex-eval", tmp_path)
    marker = tmp_path / "ran"
    (folder / "human_scores.pkl").write_bytes(pickle.dumps(_Marker(marker)))
    with pytest.raises(ImportFormatError, match=r"human_scores.pkl: refused: refused (posix|os)\.system"):
        read_bundle("vatex-eval", folder)
    assert not marker.exists()


def test_vatex_eval_refuses_any_class_but_a_plain_array(tmp_path):
    folder = _copy("vatex-eval", tmp_path)
    (folder / "video_ids.pkl").write_bytes(pickle.dumps(np.ma.masked_array(["a", "b"])))
    with pytest.raises(ImportFormatError, match="refused"):
        read_bundle("vatex-eval", folder)


def test_vatex_eval_wrong_number_of_ratings_is_named(tmp_path):
    folder = _copy("vatex-eval", tmp_path)
    (folder / "human_scores.pkl").write_bytes(pickle.dumps(np.arange(12.0), protocol=5))
    with pytest.raises(ImportFormatError, match=r"12 ratings, expected 3 x 6"):
        read_bundle("vatex-eval", folder)


# In the database


CASES = [
    ("polaris", "polaris", "polaris"),
    ("nebula", "nebula", "nebula"),
    ("foil", "foil", "foil"),
    ("composite", "composite", "composite"),
    ("vatex-eval", "vatex-eval", "vatex-eval"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("format", "folder", "slug"), CASES)
def test_round_trip_through_the_canonical_format(format, folder, slug, tmp_path):
    bundle = read_bundle(format, FIXTURES / folder)
    _run("import", format, str(FIXTURES / folder))
    original = Dataset.objects.get(slug=slug)
    assert original.content_sha256 == bundle.fingerprint()
    assert original.kind == bundle.info.kind
    assert original.modality == bundle.info.modality
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _run("export", slug, "-o", str(first))
    _run("import", "canonical", str(first), "--slug", f"{slug}-copy")
    _run("export", f"{slug}-copy", "-o", str(second))
    copy = Dataset.objects.get(slug=f"{slug}-copy")
    assert copy.content_sha256 == original.content_sha256
    assert first.read_text().splitlines()[1:] == second.read_text().splitlines()[1:]
    assert Caption.objects.filter(item__dataset=copy).count() == len(bundle.captions)
    assert Judgment.objects.filter(caption__item__dataset=copy).count() == len(bundle.judgments)
    assert PairJudgment.objects.filter(dataset=copy).count() == len(bundle.pairs)


@pytest.mark.django_db
def test_foil_pairs_in_the_database():
    _run("import", "foil", str(FIXTURES / "foil"))
    dataset = Dataset.objects.get(slug="foil")
    pairs = PairJudgment.objects.filter(dataset=dataset)
    assert pairs.count() == 4
    assert set(pairs.values_list("winner", flat=True)) == {"a"}
    assert all(pair.caption_a.system.slug == "coco-original" for pair in pairs)
    assert all(len(pair.references) == 1 for pair in pairs)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("format", "folder", "file", "old", "new", "where"),
    [
        ("polaris", "polaris", "polaris_test.csv", "0.875,surfer.jpg", "high,surfer.jpg", r"polaris_test.csv, line 7"),
        ("foil", "foil", "foilv1.0_test_2017.json", '"foil_id": 9007', '"foil_id": "x"', r"annotations\[6\].foil_id"),
        (
            "composite",
            "composite",
            "30k_correctness.csv",
            '"5";"4";"4";"2"',
            '"5";"";"4";"2"',
            r"30k_correctness.csv, line 2",
        ),
    ],
)
def test_bad_file_leaves_the_database_unchanged(format, folder, file, old, new, where, tmp_path):
    _run("import", "nebula", str(FIXTURES / "nebula"))
    before = _table_counts()
    copied = _copy(folder, tmp_path)
    source = copied / file
    text = source.read_text()
    assert old in text
    source.write_text(text.replace(old, new, 1))
    with pytest.raises(CommandError, match=rf"nothing was imported: .*{where}"):
        _run("import", format, str(copied))
    assert _table_counts() == before
    assert not Dataset.objects.filter(slug=format).exists()


@pytest.mark.django_db
def test_vatex_eval_malicious_pickle_stores_nothing(tmp_path):
    before = _table_counts()
    folder = _copy("vatex-eval", tmp_path)
    (folder / "gts_list.pkl").write_bytes(pickle.dumps(_Marker(tmp_path / "ran")))
    with pytest.raises(CommandError, match="nothing was imported: .*gts_list.pkl: refused"):
        _run("import", "vatex-eval", str(folder))
    assert _table_counts() == before
    assert not (tmp_path / "ran").exists()


def test_nebula_corrected_scores_replace_the_first_release_by_image_and_candidate(tmp_path):
    folder = _copy("nebula", tmp_path)
    first = read_bundle("nebula", folder)
    records = [  # the corrected release: other order, one record changed, one of another split
        {"imgid": "000000005678.jpg", "mt": "a giraffe eating from a tall tree", "refs": ["x"], "score": 0.5},
        {"imgid": "000000001234.jpg", "mt": "a woman holding an umbrella in the rain", "refs": ["x"], "score": 0.8},
        {"imgid": "000000000001.jpg", "mt": "not in the test split", "refs": ["x"], "score": 0.3},
    ]
    (folder / "nebula_test_corrected.json").write_text(json.dumps(records))
    corrected = read_bundle("nebula", folder, split="test-corrected")
    texts = {caption.key: caption.text for caption in corrected.captions}
    values = {texts[j.caption]: j.value for j in corrected.judgments}
    before = {texts[j.caption]: j.value for j in first.judgments}
    assert values["a giraffe eating from a tall tree"] == 0.5
    assert before["a giraffe eating from a tall tree"] == 0.95
    assert values["two children playing soccer on a field"] == before["two children playing soccer on a field"]
    assert corrected.report["corrected_scores"] == 1
    assert corrected.report["records_without_a_correction"] == 2
    assert "2 of 4 test records have no record in the corrected release" in corrected.warnings[0]
    assert (corrected.info.slug, corrected.info.title) == ("nebula-test-corrected", "Nebula (corrected scores)")
    assert corrected.info.protocol_version == "nebula-1-corrected" != first.info.protocol_version
    for info in (first.info, corrected.info):  # both versions are named on the dataset's page
        assert "'test'" in info.protocol_notes
        assert "'test-corrected'" in info.protocol_notes
    (folder / "nebula_test_corrected.json").write_text(json.dumps([*records, {**records[0], "score": 0.7}]))
    with pytest.raises(ImportFormatError, match="scores 'a giraffe eating from a tall tree'.*twice"):
        read_bundle("nebula", folder, split="test-corrected")


def test_reproduce_judges_the_nebula_table_only_on_the_corrected_scores(tmp_path):
    folder = _copy("nebula", tmp_path)
    shutil.copy(folder / "nebula_test.csv", folder / "nebula_test_corrected.csv")
    out = io.StringIO()
    call_command(
        "reproduce", "nebula", str(folder), "--split", "test", "--metrics", "bleu_4", "--replicates", "20", stdout=out
    )  # fmt: skip
    assert "(published on split test-corrected)" in out.getvalue()
    assert " n/a" in out.getvalue()
    # Four candidates cannot reproduce the paper: on the corrected split the table is judged, and fails.
    with pytest.raises(CommandError, match="differ from the papers"):
        call_command("reproduce", "nebula", str(folder), "--split", "test-corrected", "--metrics", "bleu_4",
                     "--replicates", "20", stdout=io.StringIO())  # fmt: skip


# THumB: reproduce with and without Human, caption and system level


def test_reproduce_thumb_scores_each_system_apart_with_and_without_human(tmp_path):
    generator = random.Random(3)
    words = [
        "a",
        "the",
        "dog",
        "cat",
        "man",
        "red",
        "ball",
        "park",
        "runs",
        "sits",
        "on",
        "in",
        "with",
        "near",
        "green",
        "frisbee",
    ]
    systems = ["Up-Down", "VinVL-base", "VinVL-large", "Human"]
    rows, references = [], []
    for seg in range(10):
        references.append(
            {"seg_id": str(seg), "set_id": seg, "refs": [" ".join(generator.choices(words, k=7)) for _ in range(4)]}
        )
        for system in systems:
            p, r = generator.randint(1, 5), generator.randint(1, 5)
            rows.append({
                "SYS": system, "seg_id": str(seg), "set_id": seg, "hyp": " ".join(generator.choices(words, k=8)),
                "image": f"COCO_val2014_{seg:012d}.jpg", "P": p, "R": r, "Fl": 0, "Inc": 0, "Con": 0,
                "human_score": (p + r) / 2,
            })  # fmt: skip
    (tmp_path / "mscoco_THumB-1.0.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp_path / "mscoco_references.json").write_text("".join(json.dumps(ref) + "\n" for ref in references))
    out = io.StringIO()
    call_command("reproduce", "thumb", str(tmp_path), "--metrics", "cider_d", "--replicates", "50", stdout=out)
    lines = {
        tuple(re.split(r"\s{2,}", line)[1:3]): line
        for line in out.getvalue().splitlines()
        if line.startswith("cider_d")
    }
    assert {"total (systems)", "total, without Human (systems)", "total, without Human"} <= {d for d, _ in lines}
    # The caption level: CIDEr-D of each system's captions as one corpus, Pearson against the totals.
    bundle = read_bundle("thumb", tmp_path)
    table = judgment_rows(bundle, "total")
    per_system = {}
    for system in {c.system for c in table.captions}:
        at = [n for n, c in enumerate(table.captions) if c.system == system]
        per_system.update(zip(at, get("cider_d").score([table.rows[n] for n in at]).scores, strict=True))
    scores = np.array([per_system[n] for n in range(len(table.rows))])
    expected = 100 * stats.pearsonr(scores, table.human).statistic
    printed = float(lines[("total", "pearson")].split()[3])
    assert printed == pytest.approx(expected, abs=0.006)
