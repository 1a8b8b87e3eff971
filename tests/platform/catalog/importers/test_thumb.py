"""THumB 1.0: no data on our machines, so the test writes files in the documented format."""

import json

import pytest

from catalog.importers.errors import ImportFormatError
from catalog.importers.registry import read_bundle

SYSTEMS = ["Up-Down", "Unified-VLP", "VinVL-base", "VinVL-large", "Human"]


def _row(system: str, seg: int, p: float, r: float, fl: float = 0, inc: float = 0, con: float = 0, **extra):
    row = {
        "SYS": system,
        "seg_id": str(seg),
        "set_id": seg,
        "hyp": f"{system} says a thing {seg}",
        "image": f"COCO_val2014_{seg:012d}.jpg",
        "P": p,
        "R": r,
        "Fl": fl,
        "Inc": inc,
        "Con": con,
        "human_score": (p + r) / 2 + fl + inc + con,
    }
    row.update(extra)
    return row


@pytest.fixture
def thumb_dir(tmp_path):
    rows = [_row(system, seg, 4, 3, fl=-0.5 if system == "Up-Down" else 0) for seg in range(3) for system in SYSTEMS]
    (tmp_path / "mscoco_THumB-1.0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "mscoco_references.json").write_text(
        "".join(
            json.dumps({"seg_id": str(seg), "set_id": seg, "refs": [f"ref {i} of {seg}" for i in range(4)]}) + "\n"
            for seg in range(3)
        )
    )
    return tmp_path


def test_thumb_crossed_design(thumb_dir):
    bundle = read_bundle("thumb", thumb_dir)
    assert len(bundle.items) == 3
    assert len(bundle.captions) == 15
    assert len(bundle.systems) == 5
    assert {s.slug: s.kind for s in bundle.systems}["human"] == "human"
    assert {s.slug for s in bundle.systems} >= {"up-down", "vinvl-large"}
    assert all(len(item.references) == 4 for item in bundle.items)
    assert len(bundle.judgments) == 45
    totals = [j for j in bundle.judgments if j.dimension == "total" and j.caption.system == "up-down"]
    assert totals[0].value == 3.0
    assert totals[0].detail == {"fluency": -0.5, "inclusive": 0.0, "conciseness": 0.0}
    assert not bundle.warnings


def test_thumb_inconsistent_total_is_warned(thumb_dir):
    path = thumb_dir / "mscoco_THumB-1.0.jsonl"
    path.write_text(path.read_text() + json.dumps(_row("Extra", 1, 4, 4, human_score=1.0)) + "\n")
    bundle = read_bundle("thumb", thumb_dir)
    assert len(bundle.warnings) == 1 and "line 16" in bundle.warnings[0]


@pytest.mark.parametrize(
    "change, field",
    [
        ({"P": 7}, "P"),
        ({"Fl": 0.5}, "Fl"),
        ({"hyp": ""}, "hyp"),
        ({"seg_id": "99"}, "seg_id"),
    ],
)
def test_thumb_errors_name_line_and_field(thumb_dir, change, field):
    path = thumb_dir / "mscoco_THumB-1.0.jsonl"
    lines = path.read_text().splitlines()
    lines[3] = json.dumps({**json.loads(lines[3]), **change})
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ImportFormatError) as error:
        read_bundle("thumb", thumb_dir)
    assert (error.value.line, error.value.field) == (4, field)


def test_thumb_duplicate_caption_is_an_error(thumb_dir):
    path = thumb_dir / "mscoco_THumB-1.0.jsonl"
    path.write_text(path.read_text() + json.dumps(_row("Human", 0, 3, 3)) + "\n")
    with pytest.raises(ImportFormatError, match="line 16: field 'SYS'"):
        read_bundle("thumb", thumb_dir)
