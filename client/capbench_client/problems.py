"""A file's problems, each with its place (line or entry, field), collected so that one run names
them all, as the server names a refused upload's."""

from __future__ import annotations

SHOWN = 20


class FileError(ValueError):
    """A file the client cannot use: `problems`, each "line 7, field 'image_id': …"; str() is the
    file's name and what it is not, then the problems one a line."""

    def __init__(self, file_name: str, what: str, problems: list[str], more: int = 0) -> None:
        self.file_name, self.problems, self.more = file_name, problems, more
        lines = [f"{file_name}: {what}:", *(f"  {problem}" for problem in problems)]
        if more:
            lines.append(f"  … and {more:,} more")
        super().__init__("\n".join(lines))


class FileProblems:
    """The problems found in `file_name`; the first SHOWN are kept, the rest counted."""

    def __init__(self, file_name: str) -> None:
        self.file_name = file_name
        self.problems: list[str] = []
        self.more = 0

    def add(self, problem: str) -> None:
        if len(self.problems) < SHOWN:
            self.problems.append(problem)
        else:
            self.more += 1

    def __bool__(self) -> bool:
        return bool(self.problems)

    def raise_any(self, what: str) -> None:
        if self.problems:
            raise FileError(self.file_name, what, self.problems, self.more)
