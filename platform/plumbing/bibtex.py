"""BibTeX entries from the free-text citations the catalogue and the metrics registry store.

Pure Python (no Django): the pages, the downloads and the API pass in what they know (the citation
text, a fallback title and key, a URL) and get entries back.

A citation of the shape the registry and the importers write,

    K. Papineni, S. Roukos, T. Ward and W.-J. Zhu (2002). BLEU. ACL.
    X. Chen et al. (2015). Microsoft COCO Captions: ... Server. arXiv:1504.00325.

(authors, year in parentheses, title, venue, each ending with a full stop; several such works one
after the other) becomes one entry per work: a conference venue an @inproceedings (booktitle), a
journal an @article, an arXiv identifier an @misc with eprint/archivePrefix (as arXiv exports),
any other venue an @misc (howpublished), no venue an @misc. Anything else (another shape, a
citation with words between its works) is never guessed at: one @misc with the object's own name
as its title and the whole text as its note.

Values are escaped: the characters BibTeX and LaTeX treat specially (& % $ # _ { } ~ ^ \\) become
their LaTeX commands, braces as \\textbraceleft{} / \\textbraceright{} (BibTeX counts every brace
of a value, escaped or not, so `\\{` would unbalance it); control characters are dropped. Words
with capitals past their first letter (BLEU, CIDEr, COCO) are braced in titles, so that styles
that lowercase titles keep them. URLs are kept verbatim (the url field is read as a URL), with only
what could end the value (braces, backslashes, spaces) percent-encoded; anything but http(s) is
left out.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import date

# Initials: "K.", "K. Q.", "W.-J.", "T.-Y."; surnames: "Papineni", "Le Bras", "Fei-Fei", "Dollár",
# with lowercase particles ("van der Berg").
_INITIALS = r"(?:[A-Z]\.(?:-[A-Z]\.)?\s)+"
_PARTICLES = r"(?:(?:van|von|der|den|de|del|della|di|da|du|dos|das|le|la)\s)*"
_WORD = r"[A-Z][^\W\d_]*(?:['’-][^\W\d_]+)*"
_NAME = rf"{_INITIALS}{_PARTICLES}{_WORD}(?:\s{_WORD})?"
_AUTHORS = rf"{_NAME}(?:,\s{_NAME})*(?:,?\sand\s{_NAME})?"
# One work's head: its authors (at the start, or after a space: never inside a word such as a
# venue's "CVPR." before the next work's "X. Chen"), "et al." or not, and "(YYYY). ".
_HEAD = re.compile(rf"(?<!\S)(?P<authors>{_AUTHORS})(?P<etal>\set\sal\.)?\s\((?P<year>\d{{4}})\)\.\s")
_NAME_PARTS = re.compile(rf"^(?P<initials>{_INITIALS})(?P<surname>.+)$")
_SPLIT_AUTHORS = re.compile(r",\s(?:and\s)?|\sand\s")
_ARXIV = re.compile(r"^arXiv:\s?(?P<id>[\w./-]+)$", re.IGNORECASE)
_PAGES = re.compile(r",\s*(?P<first>\d+)\s*[-–]+\s*(?P<last>\d+)$")
_VOLUME = re.compile(r"\s(?P<volume>\d+)$")
_PROTECT = re.compile(r"[^\W_](?:[^\W_]|-)*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")

CONFERENCES = frozenset(
    {
        "AAAI",
        "AACL",
        "ACCV",
        "ACL",
        "ACM MM",
        "BMVC",
        "COLING",
        "CONLL",
        "CVPR",
        "EACL",
        "ECCV",
        "EMNLP",
        "ICASSP",
        "ICCV",
        "ICLR",
        "ICME",
        "ICML",
        "ICIP",
        "IJCAI",
        "INLG",
        "INTERSPEECH",
        "KDD",
        "LREC",
        "MM",
        "NAACL",
        "NEURIPS",
        "NIPS",
        "SIGIR",
        "WACV",
        "WMT",
        "WWW",
    }
)
JOURNALS = frozenset({"IJCV", "JAIR", "JMLR", "PAMI", "TACL", "TMLR", "TPAMI", "TOMM", "TIP", "TMM"})
ARTICLES = ("a", "an", "the")


@dataclass(frozen=True)
class Entry:
    """One BibTeX entry: its type, key and fields, each value already escaped."""

    kind: str
    key: str
    fields: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    def text(self) -> str:
        lines = [f"@{self.kind}{{{self.key},"]
        lines += [f"  {name} = {{{value}}}," for name, value in self.fields]
        lines[-1] = lines[-1].rstrip(",")
        return "\n".join([*lines, "}"])


@dataclass(frozen=True)
class Work:
    """One work parsed from a citation."""

    authors: tuple[str, ...]  # as written ("K. Papineni")
    others: bool  # "et al."
    year: int
    title: str
    venue: str  # "" when the citation names none


def render(entries: list[Entry]) -> str:
    """The entries as a .bib file's text (keys made unique within it)."""
    return "\n\n".join(entry.text() for entry in _unique(entries)) + "\n"


def _unique(entries: list[Entry]) -> list[Entry]:
    seen: set[str] = set()
    out = []
    for entry in entries:
        key, n = entry.key, 1
        while key in seen:
            n += 1
            key = f"{entry.key}-{n}"
        seen.add(key)
        out.append(Entry(entry.kind, key, entry.fields))
    return out


# --- values --------------------------------------------------------------------------------------

_ESCAPES = {
    "\\": r"\textbackslash{}",
    "{": r"\textbraceleft{}",
    "}": r"\textbraceright{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def clean(text: str) -> str:
    """Control characters (NUL, escapes …) out, line breaks and tabs as spaces, runs of white space
    as one space."""
    return " ".join(_CONTROL.sub("", re.sub(r"[\t\n\r\u2028\u2029]", " ", text)).split())


def escape(text: str) -> str:
    """`text` as a BibTeX value: cleaned, every special character as its LaTeX command."""
    return "".join(_ESCAPES.get(char, char) for char in clean(text))


def title_value(text: str) -> str:
    """A title as a BibTeX value: escaped, words with capitals past their first letter braced
    ("{BLEU}", "{G-VEval}"; not "Visual-Semantic")."""
    text = clean(text)
    out, at = [], 0
    for match in _PROTECT.finditer(text):
        out.append(escape_raw(text[at : match.start()]))
        word = match.group()
        protect = any(char.isupper() for part in word.split("-") for char in part[1:])
        out.append(f"{{{word}}}" if protect else word)
        at = match.end()
    out.append(escape_raw(text[at:]))
    return "".join(out)


def escape_raw(text: str) -> str:
    """escape() without cleaning (for parts of an already cleaned text: spaces kept)."""
    return "".join(_ESCAPES.get(char, char) for char in text)


def url_value(url: str) -> str:
    """A URL for the url field, or "" when it is not http(s): verbatim but for what could end or
    break the value (braces, backslashes, quotes, spaces), percent-encoded."""
    url = _CONTROL.sub("", url).strip()
    if not re.match(r"^https?://[^\s/]", url, re.IGNORECASE):
        return ""
    return "".join(f"%{ord(char):02X}" if char in '{}\\" ' else char for char in url)


def key_part(text: str) -> str:
    """ASCII lowercase letters and digits only ("Dollár" → "dollar", "Le Bras" → "lebras")."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]", "", ascii_text.lower())


def fallback_key(slug: str) -> str:
    """`capbench-<slug>`, the slug reduced to what a key may hold."""
    return "capbench-" + (re.sub(r"[^a-z0-9_-]", "", slug.lower()) or "entry")


# --- parsing -------------------------------------------------------------------------------------


def parse(text: str) -> list[Work] | None:
    """The works of a citation of the shape `Authors (Year). Title. Venue.` (one or more, one after
    the other), or None when any of it is of another shape."""
    text = clean(text)
    heads = list(_HEAD.finditer(text))
    if not heads or heads[0].start() != 0:
        return None
    works = []
    for number, head in enumerate(heads):
        end = heads[number + 1].start() if number + 1 < len(heads) else len(text)
        body = text[head.end() : end].strip()
        if not body.endswith("."):
            return None
        parts = [part.strip() for part in re.split(r"\.\s+", body[:-1])]
        if not 1 <= len(parts) <= 2 or not all(parts) or len(parts[-1]) > 200:
            return None
        title, venue = parts[0], parts[1] if len(parts) == 2 else ""
        if venue and not _venue_shape(venue):
            return None
        authors = tuple(_SPLIT_AUTHORS.split(head.group("authors")))
        works.append(Work(authors, bool(head.group("etal")), int(head.group("year")), title, venue))
    return works


def _venue_shape(venue: str) -> bool:
    """A venue as the citations write one: a name (with a volume, pages), or an arXiv identifier."""
    return bool(_ARXIV.match(venue)) or bool(re.fullmatch(r"[\w&' .:/-]+(?:\s\d+)?(?:,\s*\d+\s*[-–]+\s*\d+)?", venue))


def bibtex_name(name: str) -> str:
    """An author as BibTeX reads one: "K. Papineni" as written; a surname of several words
    ("R. Le Bras") as "Le Bras, R." so that BibTeX does not take "Le" for a first name."""
    match = _NAME_PARTS.match(name)
    if match is None or " " not in match.group("surname"):
        return escape(name)
    return escape(f"{match.group('surname')}, {match.group('initials').strip()}")


def work_key(work: Work) -> str | None:
    """firstauthor + year + first title word (articles skipped), ASCII lowercase: papineni2002bleu."""
    surname = _NAME_PARTS.match(work.authors[0])
    words = [key_part(word) for word in work.title.split()]
    words = [word for word in words if word and word not in ARTICLES] or [""]
    author = key_part(surname.group("surname") if surname else work.authors[0])
    if not author or not words[0]:
        return None
    return f"{author}{work.year}{words[0]}"


def work_entry(work: Work, *, key: str, url: str = "") -> Entry:
    """A parsed work as an entry (see the module's description for the types)."""
    authors = [bibtex_name(name) for name in work.authors] + (["others"] if work.others else [])
    fields: list[tuple[str, str]] = [("author", " and ".join(authors)), ("title", title_value(work.title))]
    kind = "misc"
    venue = work.venue
    arxiv = _ARXIV.match(venue)
    tail: list[tuple[str, str]] = []
    if arxiv:
        tail = [("eprint", escape(arxiv.group("id"))), ("archivePrefix", "arXiv")]
        url = url or f"https://arxiv.org/abs/{arxiv.group('id')}"
    elif venue:
        pages = _PAGES.search(venue)
        if pages:
            tail.append(("pages", f"{pages.group('first')}--{pages.group('last')}"))
            venue = venue[: pages.start()].strip()
        volume = _VOLUME.search(venue)
        if volume:
            tail.insert(0, ("volume", volume.group("volume")))
            venue = venue[: volume.start()].strip()
        name = venue.upper()
        if name in JOURNALS or re.search(r"\b(journal|transactions)\b", venue, re.IGNORECASE):
            kind = "article"
            fields.append(("journal", escape(venue)))
        elif name in CONFERENCES or re.search(r"\b(workshop|conference|proceedings|symposium)\b", venue, re.I):
            kind = "inproceedings"
            fields.append(("booktitle", escape(venue)))
        else:
            fields.append(("howpublished", escape(work.venue)))
            tail = []
    fields.append(("year", str(work.year)))
    fields += tail
    if url_value(url):
        fields.append(("url", url_value(url)))
    return Entry(kind, key, tuple(fields))


# --- entries -------------------------------------------------------------------------------------


def citation_entries(citation: str, *, title: str, slug: str, url: str = "", note: str = "") -> list[Entry]:
    """The entries of a stored citation: one per work when it parses (`url` on the first, the work
    the object is; an arXiv work without it gets its arXiv page), else one @misc titled `title`
    (the object's name) with the whole text as its note. An empty citation: an @misc with the
    title, the URL and `note`."""
    text = clean(citation)
    works = parse(text) if text else None
    if works:
        return [
            work_entry(work, key=work_key(work) or fallback_key(slug), url=url if number == 0 else "")
            for number, work in enumerate(works)
        ]
    fields = [("title", title_value(title or slug))]
    if url_value(url):
        fields.append(("url", url_value(url)))
    if text or note:
        fields.append(("note", escape(text or note)))
    return [Entry("misc", fallback_key(slug), tuple(fields))]


def submitted_entry(*, name: str, owner: str, slug: str, url: str, year: int | None = None) -> Entry:
    """A metric submitted to CapBench without a citation: its name, its owner (braced: a user name,
    not a person's name BibTeX should split), its paper or its page."""
    fields = [("author", f"{{{escape(owner)}}}"), ("title", title_value(name))]
    if year is not None:
        fields.append(("year", str(year)))
    if url_value(url):
        fields.append(("url", url_value(url)))
    fields.append(("note", "submitted to CapBench"))
    return Entry("misc", fallback_key(slug), tuple(fields))


def capbench_entry(*, url: str, version: str, accessed: date) -> Entry:
    """CapBench itself, at `url` (the site's root), in `version`, read on `accessed`."""
    address = url_value(url)
    fields = [
        ("author", "{CapBench contributors}"),
        ("title", "{CapBench}: an open benchmark for caption evaluation"),
        ("year", str(accessed.year)),
    ]
    if address:
        fields += [("howpublished", f"\\url{{{address}}}"), ("url", address)]
    fields.append(("note", f"version {escape(version)}, accessed {accessed.isoformat()}"))
    return Entry("misc", "capbench", tuple(fields))
