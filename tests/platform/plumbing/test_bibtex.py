"""BibTeX from the stored citations (plumbing.bibtex): every citation the code holds (the metrics
registry's, the importers' and the built-in catalogue's) gives entries that parse, the known shapes
give the authors, year, title and venue they say, what does not parse is kept whole in a @misc, and
special characters are escaped."""

from __future__ import annotations

import ast
import importlib
from datetime import date
from pathlib import Path

import pytest

from capbench_eval.metrics import registry
from catalog.fetching.builtin import builtin_entries
from plumbing import bibtex
from tests.platform.plumbing.bibcheck import parse_bib

ROOT = Path(__file__).resolve().parents[3]
SOURCES = [ROOT / "evaluation", ROOT / "platform" / "catalog" / "importers", ROOT / "platform" / "catalog" / "fetching"]
BLEU = "K. Papineni, S. Roukos, T. Ward and W.-J. Zhu (2002). BLEU. ACL."


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[1:] if parts[0] in ("platform", "evaluation") else parts)  # the two source roots


def _value(node: ast.expr, module) -> str | None:
    """A string literal, an f-string of module constants, or a module constant; None otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        found = getattr(module(), node.id, None)
        return found if isinstance(found, str) else None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                text = _value(part.value, module)
                if text is None:
                    return None
                parts.append(text)
            else:
                parts.append(_value(part, module) or "")
        return "".join(parts)
    return None


def code_citations() -> dict[str, str]:
    """Every citation text written in the code: `citation=`, `"citation":`, `citation =` and
    `*CITATION =` in the metrics library, the importers and the built-in catalogue (where → text)."""
    found = {}
    for root in SOURCES:
        for path in sorted(root.rglob("*.py")):
            tree = ast.parse(path.read_text())
            name = _module_name(path)

            def module(name=name):
                return importlib.import_module(name)

            for node in ast.walk(tree):
                values: list[ast.expr] = []
                if isinstance(node, ast.keyword) and node.arg == "citation":
                    values.append(node.value)
                elif isinstance(node, ast.Dict):
                    values += [
                        v
                        for k, v in zip(node.keys, node.values, strict=True)
                        if getattr(k, "value", None) == "citation"
                    ]
                elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if any(
                        isinstance(t, ast.Name) and (t.id == "citation" or t.id.endswith("CITATION")) for t in targets
                    ):
                        values.append(node.value)
                for value in values:
                    text = _value(value, module)
                    if text:
                        found[f"{path.relative_to(ROOT)}:{value.lineno}"] = text
    return found


def all_citations() -> dict[str, str]:
    found = code_citations()
    for slug in registry.slugs():
        if registry.get(slug).citation:
            found[f"registry:{slug}"] = registry.get(slug).citation
    return found


def test_the_collector_finds_the_citations_of_the_registry_and_the_catalogue():
    texts = set(code_citations().values())
    assert {registry.get(slug).citation for slug in registry.slugs()} - {""} <= texts
    assert {entry.citation for entry in builtin_entries()} - {""} <= texts
    assert len(texts) > 30


def test_every_citation_in_the_code_gives_entries_that_parse():
    keys: dict[str, tuple[str, str]] = {}  # key → (first author, year): one work per key
    parsed = 0
    for where, text in all_citations().items():
        slug = where.replace("/", "-").replace(":", "-").replace(".py", "").lower()
        bib = bibtex.render(bibtex.citation_entries(text, title=where, slug=slug, url="https://example.org/x_y"))
        entries = parse_bib(bib)
        assert entries, where
        assert len({key for _, key, _ in entries}) == len(entries), f"{where}: keys repeat\n{bib}"
        for kind, key, fields in entries:
            assert key.isascii() and key == key.lower(), key
            if key.startswith("capbench-"):
                assert kind == "misc" and fields["note"], f"{where}: an unparsed citation keeps its text\n{bib}"
                continue
            parsed += 1
            assert kind in ("inproceedings", "article", "misc") and fields["author"] and fields["title"]
            work = (fields["author"].split(" and ")[0], fields["year"])
            assert keys.setdefault(key, work) == work, f"{key} names two works: {keys[key]} and {work}"
    assert parsed > 25


def test_bleu_and_a_few_known_entries():
    [(kind, key, fields)] = parse_bib(bibtex.render(bibtex.citation_entries(BLEU, title="BLEU-4", slug="bleu_4")))
    assert (kind, key) == ("inproceedings", "papineni2002bleu")
    assert fields["author"].split(" and ") == ["K. Papineni", "S. Roukos", "T. Ward", "W.-J. Zhu"]
    assert (fields["year"], fields["title"], fields["booktitle"]) == ("2002", "{BLEU}", "ACL")
    assert "url" not in fields

    coco = bibtex.render(
        bibtex.citation_entries(
            "X. Chen et al. (2015). Microsoft COCO Captions: Data Collection and Evaluation Server. arXiv:1504.00325.",
            title="COCO",
            slug="coco",
        )
    )
    [(kind, key, fields)] = parse_bib(coco)
    assert (kind, key, fields["author"]) == ("misc", "chen2015microsoft", "X. Chen and others")
    assert (fields["eprint"], fields["archivePrefix"]) == ("1504.00325", "arXiv")
    assert fields["url"] == "https://arxiv.org/abs/1504.00325"

    flickr = parse_bib(
        bibtex.render(
            bibtex.citation_entries(
                "M. Hodosh, P. Young and J. Hockenmaier (2013). Framing Image Description as a Ranking Task: "
                "Data, Models and Evaluation Metrics. Journal of Artificial Intelligence Research 47, 853-899.",
                title="Flickr8k",
                slug="flickr8k",
                url="https://hockenmaier.cs.illinois.edu/8k-pictures.html",
            )
        )
    )
    [(kind, key, fields)] = flickr
    assert (kind, key) == ("article", "hodosh2013framing")
    assert (fields["journal"], fields["volume"], fields["pages"]) == (
        "Journal of Artificial Intelligence Research",
        "47",
        "853--899",
    )
    assert fields["url"] == "https://hockenmaier.cs.illinois.edu/8k-pictures.html"

    clip = parse_bib(
        bibtex.render(
            bibtex.citation_entries(
                "J. Hessel, A. Holtzman, M. Forbes, R. Le Bras and Y. Choi (2021). CLIPScore. EMNLP.",
                title="",
                slug="c",
            )
        )
    )
    assert clip[0][2]["author"] == "J. Hessel and A. Holtzman and M. Forbes and Le Bras, R. and Y. Choi"


def test_several_works_in_one_citation_give_one_entry_each_the_url_on_the_first():
    text = (
        "A. Karpathy and L. Fei-Fei (2015). Deep Visual-Semantic Alignments for Generating Image Descriptions. "
        "CVPR. P. Young, A. Lai, M. Hodosh and J. Hockenmaier (2014). From image descriptions to visual "
        "denotations. TACL."
    )
    entries = parse_bib(bibtex.render(bibtex.citation_entries(text, title="Flickr30k", slug="f", url="https://a.org/")))
    assert [(kind, key) for kind, key, _ in entries] == [
        ("inproceedings", "karpathy2015deep"),
        ("article", "young2014from"),
    ]
    assert entries[0][2]["url"] == "https://a.org/"
    assert "url" not in entries[1][2]
    assert entries[1][2]["journal"] == "TACL"


@pytest.mark.parametrize(
    "text",
    [
        "CAMScore: cycle-consistent evaluation of image captions through text-to-image generation (2024).",
        "A Novel Evaluation Framework for Image2Text Generation (Huang et al., LLM4Eval workshop, SIGIR 2024).",
        "D. L. Chen and W. B. Dolan (2011). Collecting Highly Parallel Data for Paraphrase Evaluation. ACL. "
        "Split: S. Venugopalan et al. (2015), Sequence to Sequence - Video to Text, ICCV.",
    ],
)
def test_what_does_not_parse_is_kept_whole_never_guessed(text):
    [(kind, key, fields)] = parse_bib(bibtex.render(bibtex.citation_entries(text, title="My Metric", slug="my_metric")))
    assert (kind, key, fields["title"]) == ("misc", "capbench-my_metric", "My Metric")
    assert fields["note"] == text
    assert "author" not in fields
    assert "year" not in fields


def test_special_characters_are_escaped_and_control_characters_dropped():
    text = "A. Smith and B. Jones (2020). Costs & 100% of {braces}, $money$, #tags, snake_case ~ x^2 \\cmd. ACL."
    [(_, _, fields)] = parse_bib(bibtex.render(bibtex.citation_entries(text, title="t", slug="t")))
    title = fields["title"]
    assert r"Costs \& 100\% of \textbraceleft{}braces\textbraceright{}" in title
    assert r"\$money\$, \#tags, snake\_case \textasciitilde{} x\textasciicircum{}2 \textbackslash{}cmd" in title
    odd = "Weird\x00 & _name_ {x}\x1b[31m\nnext"
    [(kind, key, fields)] = parse_bib(bibtex.render(bibtex.citation_entries(odd, title=odd, slug="Odd Slug!")))
    assert key == "capbench-oddslug"
    assert fields["note"] == r"Weird \& \_name\_ \textbraceleft{}x\textbraceright{}[31m next"


def test_urls_are_kept_verbatim_and_only_http():
    [(_, _, fields)] = parse_bib(
        bibtex.render(bibtex.citation_entries("", title="t", slug="t", url="https://example.org/a_b?x=1&y=%20#z"))
    )
    assert fields["url"] == "https://example.org/a_b?x=1&y=%20#z"
    assert bibtex.url_value("https://example.org/{x} y\\") == "https://example.org/%7Bx%7D%20y%5C"
    assert bibtex.url_value("javascript:alert(1)") == ""


def test_a_submitted_metric_without_citation_and_capbench_itself():
    entry = bibtex.submitted_entry(
        name="My Metric_2", owner="alice_b", slug="my-metric", url="https://example.org/p", year=2025
    )
    [(kind, key, fields)] = parse_bib(bibtex.render([entry]))
    assert (kind, key, fields["author"], fields["title"]) == (
        "misc",
        "capbench-my-metric",
        r"{alice\_b}",
        r"My Metric\_2",
    )
    assert (fields["url"], fields["note"], fields["year"]) == ("https://example.org/p", "submitted to CapBench", "2025")
    own = bibtex.capbench_entry(url="https://capbench.example", version="0.1.0", accessed=date(2025, 3, 4))
    [(kind, key, fields)] = parse_bib(bibtex.render([own]))
    assert (kind, key, fields["author"], fields["year"]) == ("misc", "capbench", "{CapBench contributors}", "2025")
    assert fields["title"] == "{CapBench}: an open benchmark for caption evaluation"
    assert fields["howpublished"] == r"\url{https://capbench.example}"
    assert fields["note"] == "version 0.1.0, accessed 2025-03-04"


def test_keys_repeated_in_one_file_are_told_apart():
    entries = bibtex.citation_entries(BLEU + " " + BLEU, title="x", slug="x")
    assert [key for _, key, _ in parse_bib(bibtex.render(entries))] == ["papineni2002bleu", "papineni2002bleu-2"]
