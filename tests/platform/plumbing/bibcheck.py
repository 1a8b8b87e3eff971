"""A small BibTeX reader for the tests: each entry's `@type{key,` header and its `name = {value}`
fields, braces counted as BibTeX counts them (escaped or not). Anything else fails an assertion."""

from __future__ import annotations

import re

HEADER = re.compile(r"@(?P<kind>[a-z]+)\{(?P<key>[a-z0-9][a-z0-9:_-]*),\n")
FIELD = re.compile(r"  (?P<name>[A-Za-z]+) = \{")
UNESCAPED = re.compile(r"(?<!\\)[&%$#_]")
VERBATIM = ("url", "howpublished")  # URLs: read verbatim by the url package


def parse_bib(text: str) -> list[tuple[str, str, dict[str, str]]]:
    """[(type, key, {field: value})] of a .bib text; asserts its shape."""
    entries = []
    pos = 0
    while True:
        while pos < len(text) and text[pos] in " \n":
            pos += 1
        if pos == len(text):
            return entries
        header = HEADER.match(text, pos)
        assert header, f"no @type{{key, header at {text[pos : pos + 60]!r}"
        pos = header.end()
        fields: dict[str, str] = {}
        while True:
            if text.startswith("}", pos):
                pos += 1
                break
            found = FIELD.match(text, pos)
            assert found, f"no `name = {{` field at {text[pos : pos + 60]!r}"
            name = found.group("name")
            assert name not in fields, f"field {name} twice in {header.group('key')}"
            pos, depth, start = found.end(), 1, found.end()
            while depth:
                assert pos < len(text), f"unbalanced braces in {header.group('key')}.{name}"
                depth += {"{": 1, "}": -1}.get(text[pos], 0)
                pos += 1
            value = text[start : pos - 1]
            fields[name] = value
            assert not re.search(r"[\x00-\x1f\x7f]", value), f"a control character in {name}: {value!r}"
            if name not in VERBATIM:
                assert not UNESCAPED.search(value), f"an unescaped special character in {name}: {value!r}"
                assert "~" not in value and "^" not in value, f"an unescaped ~ or ^ in {name}: {value!r}"
            if text.startswith(",\n", pos):
                pos += 2
            else:
                assert text.startswith("\n}", pos), f"no , or }} after {name} at {text[pos : pos + 30]!r}"
                pos += 1
        entries.append((header.group("kind"), header.group("key"), fields))
