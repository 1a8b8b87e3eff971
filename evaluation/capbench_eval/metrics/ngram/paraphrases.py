"""METEOR's paraphrase table cut down to the words a batch can match (docs/metrics.md §2, "A
batch's own paraphrase table").

Meteor 1.5 reads its whole English paraphrase table (5.3 million phrase pairs, 62 MB gzipped) when
its JVM starts: 9 to 13 s of the 15 s a fresh JVM takes to score 5,664 captions here. A pair can
only match where both its phrases occur, word for word, in the texts Meteor aligns; Meteor's `-norm`
lower-cases, cuts a token at punctuation (`mom 's` is aligned as `mom ' s`), drops the dots of
abbreviations and dashes (`u.s.` is aligned as `us`) and writes every quote as ', so every word it
aligns is a piece of one of the input tokens so rewritten (`forms`) or punctuation alone. The table
given to a fresh JVM (`-a`) therefore keeps each pair whose every word is a substring of one of a
token's forms or has no letter or digit: a superset of the pairs that can match, in the table's order,
so Meteor's alignments and scores are the same as with the whole table, to the last digit
(tests/evaluation/metrics/test_paraphrases.py compares them on every shipped human-judgment set).

The table is read once into an index kept in CAPBENCH_METEOR_INDEX_DIR (default
~/.cache/capbench/meteor-paraphrases; about 250 MB, 25 s and 1 GB of memory to build), keyed by the
table file's size and gzip trailer. The first batch that would have been cut without it gets the
whole table, as before, and starts the build in a background process; every later one is cut, in
about a second for Flickr8k's vocabulary (the kept pairs' bytes copied from the index as the table
holds them). A worker's warm JVM (`MeteorProcess.warm`) always has the whole table."""

from __future__ import annotations

import gzip
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from array import array
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from capbench_eval import config
from capbench_eval.metrics.base import MetricUnavailable
from capbench_eval.metrics.ngram.java import coco_resource

logger = logging.getLogger(__name__)
LOCK = ".build.lock"  # beside the indexes: held by whoever builds one
_build_started = False
TABLE = "meteor/data/paraphrase-en.gz"
INDEX_FILES = ("words.txt", "phrases.npy", "pairs.npy", "text.bin", "offsets.npy")


def table_path() -> Path:
    return coco_resource(TABLE)


def index_dir(table: Path | None = None) -> Path:
    """Where the index of `table` lives: named by the file's size and its gzip trailer (the CRC-32
    and length of the text it holds), so any copy of the same table shares one index."""
    table = table or table_path()
    with open(table, "rb") as file:
        size = file.seek(-8, os.SEEK_END) + 8
        trailer = file.read(8).hex()
    root = config.env.meteor_index_dir or Path.home() / ".cache" / "capbench" / "meteor-paraphrases"
    return root / f"{size}-{trailer}"


class ParaphraseIndex:
    """The table as arrays: its distinct words (`words`); its distinct phrases as rows of word ids
    (`phrases`, padded with the id len(words)); each pair's two phrase ids (`pairs`); and the
    table's own text, each pair's probability line (segment i for pair i) and each phrase's line
    (segment n + j for phrase j), `text[offsets[k]:offsets[k + 1]]`, so a cut is its bytes as read."""

    def __init__(self, folder: Path) -> None:
        self.words = (folder / "words.txt").read_text(encoding="utf-8").split("\n")
        # memory-mapped: in the page cache, shared by the processes that cut the table
        self.phrases = np.load(folder / "phrases.npy", mmap_mode="r")
        self.pairs = np.load(folder / "pairs.npy", mmap_mode="r")
        self.text = np.memmap(folder / "text.bin", dtype=np.uint8, mode="r")
        self.offsets = np.load(folder / "offsets.npy", mmap_mode="r")
        # words that can match whatever the texts: those with no letter or digit (and the padding)
        self.symbols = np.array([not any(character.isalnum() for character in word) for word in self.words] + [True])
        self.longest = max(map(len, self.words))  # no longer piece of a token can be a word of the table

    @classmethod
    def load(cls) -> ParaphraseIndex | None:
        """The index of the jar's table (read once per process), or None when it has not been built."""
        folder = index_dir()
        if not all((folder / name).exists() for name in INDEX_FILES):
            return None
        if folder not in _loaded:
            _loaded[folder] = cls(folder)
        return _loaded[folder]

    def kept(self, tokens: Iterable[str]) -> np.ndarray:
        """The indices of the pairs texts of these tokens could match (see the module's docstring)."""
        pieces: set[str] = set()
        longest = self.longest
        for token in set(tokens):
            for form in forms(token):
                pieces.update(
                    form[i:j] for i in range(len(form)) for j in range(i + 1, min(len(form), i + longest) + 1)
                )
        present = self.symbols.copy()
        present[:-1] |= np.fromiter((word in pieces for word in self.words), bool, len(self.words))
        phrase_present = present[self.phrases].all(axis=1)
        return np.flatnonzero(phrase_present[self.pairs].all(axis=1))

    def write(self, entries: np.ndarray, path: Path, chunk: int = 100_000) -> None:
        """The pairs `entries` as the table holds them (a probability line and the two phrases'
        lines each, in the table's order), gzipped as Meteor reads it (stored, not compressed:
        the file is read once, at once)."""
        with gzip.open(path, "wb", compresslevel=0) as file:
            for first in range(0, len(entries), chunk):
                kept = np.asarray(entries[first : first + chunk])
                segments = np.column_stack([kept, len(self.pairs) + self.pairs[kept]]).ravel()
                starts = self.offsets[segments].astype(np.int64)
                lengths = self.offsets[segments + 1].astype(np.int64) - starts
                # each output byte's place in `text`: its segment's start plus its place in the segment
                ends = np.cumsum(lengths)
                places = np.arange(ends[-1], dtype=np.int64) + np.repeat(starts - (ends - lengths), lengths)
                file.write(self.text[places].tobytes())


_loaded: dict[Path, ParaphraseIndex] = {}
# What Meteor's -norm makes of a token besides lower-casing and cutting at punctuation: it drops the
# dots of abbreviations (`u.s.` is aligned as `us`) and dashes, and writes every quote as '.
QUOTES = str.maketrans({"`": "'", "\u2018": "'", "\u2019": "'"})


def forms(token: str) -> set[str]:
    """The token as given and as Meteor's normaliser may write it, each of whose substrings may be
    a word Meteor aligns."""
    lower = token.lower()
    return {token, lower, lower.translate(QUOTES), lower.replace(".", ""), lower.replace("-", ""),
            lower.replace(".", "").replace("-", "").translate(QUOTES)}  # fmt: skip


def index_or_none() -> ParaphraseIndex | None:
    """The index, or None when it is not built or cannot be read (the whole table is then used)."""
    try:
        return ParaphraseIndex.load()
    except (OSError, ValueError, RuntimeError):  # unreadable, damaged, or no home folder
        return None


def paraphrases_for(tokens: Iterable[str]) -> Path | None:
    """The table cut for texts of these tokens, written to a new temporary folder (the caller
    removes it); None when the index is not built yet, whose building then starts in the background."""
    index = index_or_none()
    if index is None:
        build_index_soon()
        return None
    path = Path(tempfile.mkdtemp(prefix="capbench-meteor-")) / "paraphrase-en.gz"
    try:
        index.write(index.kept(tokens), path)
    except (OSError, ValueError, IndexError):  # a full disk, a damaged index: the whole table
        shutil.rmtree(path.parent, ignore_errors=True)
        return None
    return path


def build_index_soon() -> None:
    """The index built by a background process at low priority, at most once per process, unless
    one is being built (its lock held) or none can be (no pycocoevalcap, a read-only folder)."""
    global _build_started
    if _build_started:
        return
    try:
        folder = index_dir()
        folder.parent.mkdir(parents=True, exist_ok=True)
        with open(folder.parent / LOCK, "a") as lock:
            import fcntl  # (POSIX only: here, not at import, so the library still imports on Windows)

            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # (released on closing: only a test)
    except (OSError, RuntimeError, ImportError, MetricUnavailable):  # (ImportError: no fcntl)
        return
    _build_started = True
    logger.warning(
        "building the index of METEOR's paraphrase table in %s in the background, once (25 s, 1 GB of memory, "
        "250 MB on disk; its log: %s)", folder.parent, folder.parent / "build.log",
    )  # fmt: skip
    try:
        with open(folder.parent / "build.log", "ab") as log:
            subprocess.Popen(
                [sys.executable, "-m", __name__],
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
    except OSError:
        logger.warning("could not start the index build", exc_info=True)


def build_index(table: Path | None = None) -> Path:
    """Read the table once and keep its index on disk (atomically: a half-built index is never
    read). Raises ValueError if a phrase is not single-spaced words (its words would not be
    where the index looks for them)."""
    table = table or table_path()
    folder = index_dir(table)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / LOCK, "a") as lock:
        import fcntl  # (POSIX only: see build_index_soon)

        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time: a second builder waits, then finds it built
        if not all((folder / name).exists() for name in INDEX_FILES):
            _build(table, folder)
    return folder


def _build(table: Path, folder: Path) -> None:
    phrases: dict[bytes, int] = {}
    pairs, lengths = array("i"), array("i")
    probability_text = bytearray()
    with gzip.open(table, "rb") as file:
        for number, probability in enumerate(file, 1):
            probability_text += probability
            lengths.append(len(probability))
            for phrase in (next(file), next(file)):
                if phrase not in phrases:
                    if b"" in phrase.rstrip(b"\n").split(b" "):
                        raise ValueError(f"{table}: pair {number} has a phrase that is not single-spaced words")
                    phrases[phrase] = len(phrases)
                pairs.append(phrases[phrase])
    words: dict[str, int] = {}
    split = [
        [words.setdefault(word, len(words)) for word in phrase.decode().rstrip("\n").split(" ")] for phrase in phrases
    ]
    padding = len(words)
    padded = np.full((len(split), max(map(len, split))), padding, dtype=np.min_scalar_type(padding))
    for row, ids in enumerate(split):
        padded[row, : len(ids)] = ids
    lengths.extend(len(phrase) for phrase in phrases)
    offsets = np.concatenate([[0], np.cumsum(np.frombuffer(lengths, dtype=np.int32), dtype=np.int64)])
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=folder.parent))
    (building / "words.txt").write_text("\n".join(words), encoding="utf-8")
    np.save(building / "phrases.npy", padded)
    np.save(building / "pairs.npy", np.frombuffer(pairs, dtype=np.int32).reshape(-1, 2))
    with open(building / "text.bin", "wb") as text:
        text.write(probability_text)
        text.writelines(phrases)
    np.save(building / "offsets.npy", offsets.astype(np.min_scalar_type(offsets[-1])))
    building.chmod(0o755)  # (mkdtemp's 0700: readable by the other accounts that share the folder)
    shutil.rmtree(folder, ignore_errors=True)  # (a folder missing files: left by hand, say)
    os.rename(building, folder)


if __name__ == "__main__":  # build_index_soon's background process
    os.nice(10)
    build_index()
