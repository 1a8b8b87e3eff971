"""The corpus a corpus-dependent metric scores a dataset's candidates in (docs/metaeval.md §7.7):
THumB's is each system's captions apart, each once, whatever the number of rating dimensions, and
its per-caption CIDEr-D equals pycocoevalcap scoring each system's results file."""

import contextlib
import io
import json
import random
from dataclasses import replace

import pytest
from pycocoevalcap.cider.cider import Cider as OracleCider
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer as OracleTokenizer

from capbench_eval.metaeval.protocols import CANDIDATES, PROTOCOLS
from capbench_eval.metrics import CaptionRow, get
from catalog.importers.registry import read_bundle
from catalog.models import Caption, Judgment
from catalog.services.imports import dataset_import
from scoring.models import CorrelationResult, Score
from scoring.services.planning import dataset_plan, versions_rescore
from tests.platform.scoring.inline import run_jobs

SYSTEMS = ["Up-Down", "VinVL-base", "VinVL-large", "Human"]
WORDS = [
    "a",
    "an",
    "the",
    "dog",
    "cat",
    "man",
    "woman",
    "child",
    "red",
    "blue",
    "green",
    "ball",
    "frisbee",
    "park",
    "street",
    "runs",
    "sits",
    "holds",
    "on",
    "in",
    "near",
    "with",
]
IMAGES = 12

pytestmark = pytest.mark.django_db(transaction=True)


def _sentence(generator: random.Random) -> str:
    return " ".join(generator.choice(WORDS) for _ in range(generator.randint(4, 11))) + " ."


def _thumb_files(folder, captioned) -> None:
    """A THumB 1.0 file in its documented format; `captioned(seg, system)` says whether the system
    captions that image, and with which text (None: a random one)."""
    generator = random.Random(7)
    rows = []
    for seg in range(IMAGES):
        for system in SYSTEMS:
            if captioned(seg, system) is False:
                continue
            p, r = generator.randint(1, 5), generator.randint(1, 5)
            rows.append(
                {
                    "SYS": system,
                    "seg_id": str(seg),
                    "set_id": seg,
                    "hyp": captioned(seg, system) or _sentence(generator),
                    "image": f"COCO_val2014_{seg:012d}.jpg",
                    "P": p,
                    "R": r,
                    "Fl": 0,
                    "Inc": 0,
                    "Con": 0,
                    "human_score": (p + r) / 2,
                }
            )
    references = [
        {"seg_id": str(seg), "set_id": seg, "refs": [_sentence(generator) for _ in range(4)]} for seg in range(IMAGES)
    ]
    (folder / "mscoco_THumB-1.0.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (folder / "mscoco_references.json").write_text("".join(json.dumps(ref) + "\n" for ref in references))


@pytest.fixture
def thumb_dir(tmp_path):
    """Every system captions every image (a crossed design)."""
    _thumb_files(tmp_path, lambda seg, system: None)
    return tmp_path


def _imported(folder, slug: str, keep_dimensions: list[str] | None = None):
    dataset = dataset_import(bundle=read_bundle("thumb", folder), source_path="test", slug=slug, title=slug).dataset
    if keep_dimensions is not None:  # the same captions rated on fewer dimensions
        Judgment.objects.filter(caption__item__dataset=dataset).exclude(dimension__in=keep_dimensions).delete()
        dataset.dimensions = keep_dimensions
        dataset.save(update_fields=["dimensions"])
    run_jobs(dataset_plan(dataset=dataset, slugs=["cider_d"]))
    return dataset


def _pycocoevalcap_per_system(dataset) -> dict[tuple[str, str], float]:
    """(system slug, image) -> CIDEr-D, each system's captions scored as one results file."""
    captions = Caption.objects.filter(item__dataset=dataset).select_related("item", "system")
    by_system: dict[str, list] = {}
    for caption in captions:
        by_system.setdefault(caption.system.slug, []).append(caption)
    found = {}
    tokenizer = OracleTokenizer()
    for slug, group in by_system.items():
        with contextlib.redirect_stdout(io.StringIO()):
            gts = tokenizer.tokenize({c.item.external_id: [{"caption": r} for r in c.item.references] for c in group})
            res = tokenizer.tokenize({c.item.external_id: [{"caption": c.text}] for c in group})
        _, scores = OracleCider().compute_score(gts, res)
        found.update({(slug, image): float(value) for image, value in zip(gts, scores, strict=True)})
    return found


def _stored(dataset) -> dict[tuple[str, str], float]:
    rows = Score.objects.filter(caption__item__dataset=dataset, metric_version__metric__slug="cider_d").values_list(
        "caption__system__slug", "caption__item__external_id", "value"
    )
    return {(system, image): value for system, image, value in rows}


@pytest.mark.slow  # over 5 s of CPU (issue 40)
def test_thumb_cider_is_scored_per_system_once_per_caption_for_one_or_three_dimensions(thumb_dir):
    three = _imported(thumb_dir, "thumb-three")
    one = _imported(thumb_dir, "thumb-one", keep_dimensions=["total"])
    expected = _pycocoevalcap_per_system(three)
    assert len(expected) == IMAGES * len(SYSTEMS)
    for dataset in (three, one):
        stored = _stored(dataset)
        assert stored.keys() == expected.keys()
        for key, value in expected.items():
            assert stored[key] == pytest.approx(value, abs=1e-9), key
    # The rule is not a no-op here: one corpus of all rows (or of 3 rows per caption) gives other numbers.
    captions = list(Caption.objects.filter(item__dataset=three).select_related("item", "system").order_by("id"))
    rows = [CaptionRow(str(c.pk), c.text, tuple(c.item.references)) for c in captions]
    for corpus in (rows, [row for row in rows for _ in range(3)]):
        whole = dict(zip([row.id for row in corpus], get("cider_d").score(corpus).scores, strict=False))
        assert any(abs(whole[str(c.pk)] - expected[(c.system.slug, c.item.external_id)]) > 1e-3 for c in captions)


def test_thumb_paper_cells_with_and_without_human(thumb_dir):
    dataset = _imported(thumb_dir, "thumb-cells")
    cells = CorrelationResult.objects.filter(dataset=dataset, protocol="thumb/paper@3")
    caption_level = {r.dimension: r for r in cells.filter(level="caption", statistic="pearson")}
    assert set(caption_level) == {
        "precision",
        "recall",
        "total",
        "precision, without Human",
        "recall, without Human",
        "total, without Human",
    }
    assert caption_level["total"].n == IMAGES * len(SYSTEMS)
    assert caption_level["total, without Human"].n == IMAGES * (len(SYSTEMS) - 1)
    system_level = {r.dimension: r for r in cells.filter(level="system", statistic="pearson")}
    assert system_level["total"].n == len(SYSTEMS)
    assert system_level["total, without Human"].n == len(SYSTEMS) - 1


def test_identical_captions_of_two_systems_are_scored_each_in_its_own_systems_corpus(tmp_path):
    """Up-Down captions images 0-5, VinVL-base 6-11 and image 0 with Up-Down's very words: the
    same candidate and references, two corpora, two numbers (not one score reused for both)."""
    same = "a dog runs in the park with a red ball ."

    def captioned(seg, system):
        if system == "Up-Down":
            return same if seg == 0 else None if seg < 6 else False
        if system == "VinVL-base":
            return same if seg == 0 else None if seg >= 6 else False
        return False

    _thumb_files(tmp_path, captioned)
    dataset = _imported(tmp_path, "thumb-overlap")
    expected = _pycocoevalcap_per_system(dataset)
    stored = _stored(dataset)
    assert stored.keys() == expected.keys()
    assert len(stored) == 13
    for key, value in expected.items():
        assert stored[key] == pytest.approx(value, abs=1e-9), key
    first, second = expected[("up-down", "0")], expected[("vinvl-base", "0")]
    assert abs(first - second) > 1e-3  # the two corpora give the same words other numbers


@pytest.mark.slow  # over 5 s of CPU (issue 40)
def test_msvd_eval_scores_each_videos_candidate_once_whatever_its_judgments(judgment_data):
    """Two annotators × four ACCR dimensions are 8 judgments per candidate; G-VEval's corpus has
    each video once (one pycocoevalcap id per video), and so does ours."""
    dataset = dataset_import(
        bundle=read_bundle("msvd-eval", judgment_data / "msvd_eval"), source_path="shared", slug="msvd", title="MSVD"
    ).dataset
    run_jobs(dataset_plan(dataset=dataset, slugs=["cider_d"]))
    captions = list(Caption.objects.filter(item__dataset=dataset).select_related("item").order_by("id"))
    assert Judgment.objects.filter(caption__item__dataset=dataset).count() == 8 * len(captions)
    rows = [CaptionRow(str(c.pk), c.text, tuple(c.item.references)) for c in captions]
    once = get("cider_d").score(rows).scores
    stored = dict(Score.objects.filter(caption__item__dataset=dataset).values_list("caption_id", "value"))
    assert [stored[c.pk] for c in captions] == pytest.approx(once, abs=1e-9)
    eight = get("cider_d").score([row for row in rows for _ in range(8)]).scores[0::8]  # the old corpus
    assert max(abs(a - b) for a, b in zip(once, eight, strict=True)) > 1e-3


def test_a_protocols_new_corpus_rule_rescores_the_datasets_candidates(thumb_dir, monkeypatch):
    """The existing re-score path carries a rule change: the sweep finds the dataset job planned
    under the old rule and plans it again; its scores become the new corpus's."""
    dataset = _imported(thumb_dir, "thumb-moved")
    before = _stored(dataset)
    assert versions_rescore() == []  # nothing moved yet
    paper = PROTOCOLS["thumb/paper"]
    monkeypatch.setitem(PROTOCOLS, "thumb/paper", replace(paper, corpus=CANDIDATES))
    planned = versions_rescore()
    assert [(job.dataset_id, job.metric_version.metric.slug) for job in planned] == [(dataset.pk, "cider_d")]
    run_jobs(planned)
    assert versions_rescore() == []  # planned once
    captions = list(Caption.objects.filter(item__dataset=dataset).select_related("item", "system").order_by("id"))
    rows = [CaptionRow(str(c.pk), c.text, tuple(c.item.references)) for c in captions]
    once = dict(zip(captions, get("cider_d").score(rows).scores, strict=True))  # every candidate once
    after = _stored(dataset)
    for caption, value in once.items():
        assert after[(caption.system.slug, caption.item.external_id)] == pytest.approx(value, abs=1e-9)
    assert after != pytest.approx(before, abs=1e-6)
