"""The repository stands alone: what users read (README, docs, templates), the product's code and the
tests cite only files inside it. A fresh clone runs `make test` with nothing beside it: the human-
judgment data the tests read is in tests/data/ (tests/judgment_data.py)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ["README.md", "docs", "platform", "evaluation", "templates", "static", "bench", "docker", "Makefile", "tests"]
OUTSIDE = re.compile(
    r"\.\./shared|shared/(docs|data)\b|/work/shared|[\"']shared[\"'] */ *[\"']data[\"']|parent */ *[\"']shared[\"']"
)


def product_files():
    for entry in PRODUCT:
        path = ROOT / entry
        for file in [path] if path.is_file() else sorted(path.rglob("*")):
            if (
                file.is_file()
                and file != Path(__file__)
                and file.suffix in {"", ".md", ".py", ".html", ".txt", ".js", ".css", ".yaml", ".sh"}
            ):
                yield file


def test_nothing_users_read_or_run_points_outside_the_repository():
    found = [
        f"{file.relative_to(ROOT)}:{number}: {line.strip()}"
        for file in product_files()
        for number, line in enumerate(file.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert len(list(product_files())) > 100  # the walk sees the tree
    assert not found, "cites a path outside the repository (write the reference into docs/):\n" + "\n".join(found)
