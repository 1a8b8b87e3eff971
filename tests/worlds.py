"""Kept worlds: a fixture's rows built once per test process and copied back for every later test
that starts from the same place.

    kept("board", build, inputs=(...))

The first time, `build()` runs as it always would, and what it changed is kept: the rows of every
table it wrote (PostgreSQL's COPY) and the files it added to the local file store. A later call with
the same key gets those rows and files copied back instead (the demo dataset: 0.2-0.4 s to import,
a scored board: 3-4 s to build). The key: the world's name, the database's content before it
(every row of every non-empty table), whether the test runs in a transaction or on committed rows
(a board is made on commit), every setting, the file store's folder, and the caller's `inputs` (the
metric registry, for a world that plans jobs). Any difference, and the world is built again; so too
when a file the store had at the build is gone. Both ways the fixture returns the same thing: its
rows fetched afresh.

What is not kept: what the build sends outside the database and the file store (queued messages,
mails, Valkey counters, kept pages: a test that reads those after a kept world builds its own), the
time (copied rows keep the build's), and the settings it changes (a fixture changes those before
calling `kept`). A builder returns rows and plain values only, and names the rows it makes (a
factory's sequence name would be made again by a later test). Without a superuser connection (the
copy turns foreign-key triggers off while it writes) or with a bucket for a file store nothing is
kept (`keeping()`).
"""

from __future__ import annotations

import hashlib
import io
import os
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.files.storage import FileSystemStorage, storages
from django.db import connection, models, transaction
from django.utils.functional import LazyObject

# Worlds kept in this process, newest last (each a few megabytes at most: the board's is about 1).
KEPT: OrderedDict[str, _World] = OrderedDict()
MOST = 24
COUNTS: Counter[str] = Counter()  # "built" and "copied", by world: what this process did


@dataclass(frozen=True)
class _World:
    tables: dict[str, str]  # table → its rows as COPY text, for each table the build changed
    sequences: dict[str, tuple[str, str]]  # table → its primary key's column and sequence
    files: dict[str, bytes]  # path in the file store → content, for each file the build added
    had: frozenset[str]  # the other files the store had then (the build's rows may name them)
    made: Any  # what the build returned, each row as a _Row


@dataclass(frozen=True)
class _Row:
    label: str
    pk: Any


def kept(name: str, build: Callable[[], Any], *, inputs: object = ()) -> Any:
    root = _store()
    if root is None or not superuser(connection):
        COUNTS[f"{name} built"] += 1
        return _revived(_described(build()))
    before = _rows()
    key = _key(name, before, root, inputs)
    world = KEPT.get(key)
    if world is not None and not world.had <= _paths(_files(root), root):
        world = None  # (a test removed a file it had: the build would store it again)
    if world is None:
        COUNTS[f"{name} built"] += 1
        world = _built(build, before, root)
        KEPT[key] = world
        while len(KEPT) > MOST:
            KEPT.popitem(last=False)
    else:
        COUNTS[f"{name} copied"] += 1
        KEPT.move_to_end(key)
        _copy_back(world, root)
    return _revived(world.made)


def _built(build: Callable[[], Any], before: dict[str, str], root: Path) -> _World:
    """The world `build` makes: what it returned, and the rows and files it changed."""
    files = _files(root)
    made = _described(build())
    after = _rows()
    changed = {table: rows for table, rows in after.items() if before.get(table) != rows}
    emptied = {table: "" for table in before if table not in after}
    added = _files_added(root, files)
    return _World(
        tables={**changed, **emptied},
        sequences=_sequences([*changed, *emptied]),
        files=added,
        had=frozenset(_paths(_files(root), root) - added.keys()),
        made=made,
    )


def keeping() -> bool:
    """Whether worlds are kept here (a superuser's connection, a folder for a file store)."""
    return _store() is not None and superuser(connection)


def superuser(connection) -> bool:
    """Whether this connection's role is a superuser (asked once per connection): rows are copied
    back, and the test database emptied (tests/conftest.py), with foreign-key triggers off."""
    if not hasattr(connection, "capbench_superuser"):
        with connection.cursor() as cursor:
            cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
            connection.capbench_superuser = bool(cursor.fetchone()[0])
    return connection.capbench_superuser


def _store() -> Path | None:
    """The local folder of the file store (None for a bucket: its files are not kept)."""
    store = storages["default"]
    return Path(store.location) if isinstance(store, FileSystemStorage) else None


def _tables() -> list[str]:
    return sorted(connection.introspection.django_table_names(only_existing=True, include_views=False))


def _rows() -> dict[str, str]:
    """Every non-empty table's rows as COPY text, sorted (COPY gives no order)."""
    tables = _tables()
    quoted = connection.ops.quote_name
    probe = " UNION ALL ".join(f"SELECT %s WHERE EXISTS (SELECT 1 FROM {quoted(table)})" for table in tables)
    with connection.cursor() as cursor:
        cursor.execute(probe, tables)
        filled = [row[0] for row in cursor.fetchall()]
    rows = {}
    with connection.connection.cursor() as raw:
        for table in filled:
            text = io.BytesIO()
            with raw.copy(f"COPY {quoted(table)} TO STDOUT") as copy:
                for block in copy:
                    text.write(block)
            # (COPY ends each row with a newline and writes one inside a value as a backslash and n;
            # splitlines would also split at Unicode's separators, which COPY leaves as they are)
            rows[table] = "\n".join(sorted(text.getvalue().decode().split("\n")[:-1]))
    return rows


def _key(name: str, before: dict[str, str], root: Path, inputs: object) -> str:
    digest = hashlib.sha256()
    configured = {key: _shown(getattr(settings, key)) for key in dir(settings) if key.isupper()}
    # (a repr naming an address tells nothing of the value)
    configured = {key: shown for key, shown in configured.items() if " at 0x" not in shown}
    for part in (name, connection.in_atomic_block, root, sorted(configured.items()), inputs):
        digest.update(repr(part).encode() + b"\0")
    for table, rows in sorted(before.items()):
        digest.update(table.encode() + b"\0" + rows.encode() + b"\0")
    return digest.hexdigest()


def _shown(value: object) -> str:
    if isinstance(value, LazyObject):
        str(value)  # (read: its repr names its value, not the function that makes it)
    return repr(value)


def _sequences(tables: list[str]) -> dict[str, tuple[str, str]]:
    """Each table's primary key column and the sequence that numbers it, where one does."""
    columns = {model._meta.db_table: model._meta.pk.column for model in apps.get_models(include_auto_created=True)}
    found = {}
    with connection.cursor() as cursor:
        for table in tables:
            if table not in columns:
                continue
            cursor.execute("SELECT pg_get_serial_sequence(%s, %s)", [connection.ops.quote_name(table), columns[table]])
            row = cursor.fetchone()
            if row and row[0]:
                found[table] = (columns[table], row[0])
    return found


def _copy_back(world: _World, root: Path) -> None:
    """The kept rows in place of what those tables hold (the same as before the build, or the key
    would differ), each id sequence past the largest id, and the kept files."""
    quoted = connection.ops.quote_name
    with transaction.atomic(), connection.connection.cursor() as raw:
        raw.execute("SET LOCAL session_replication_role = replica")
        for table, rows in world.tables.items():
            raw.execute(f"DELETE FROM {quoted(table)}")
            if rows:
                with raw.copy(f"COPY {quoted(table)} FROM STDIN") as copy:
                    copy.write(rows + "\n")
        for table, (column, sequence) in world.sequences.items():
            raw.execute(
                f"SELECT setval('{sequence}', GREATEST((SELECT COALESCE(max({quoted(column)}), 1) "
                f"FROM {quoted(table)}), (SELECT last_value FROM {sequence})))"
            )
        raw.execute("SET LOCAL session_replication_role = origin")
    for path, content in world.files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(content)


def _files(root: Path) -> dict[str, frozenset[str]]:
    """Each folder of the local file store and the names of the files in it (no file is read or
    asked its time: the store holds thousands)."""
    return {folder: frozenset(names) for folder, _, names in os.walk(root)}


def _paths(files: dict[str, frozenset[str]], root: Path) -> set[str]:
    return {str((Path(folder) / name).relative_to(root)) for folder, names in files.items() for name in names}


def _files_added(root: Path, before: dict[str, frozenset[str]]) -> dict[str, bytes]:
    """The files added since `before`: their content. (A name the store had is the same content:
    it is content-addressed.)"""
    added = {}
    for folder, names in _files(root).items():
        for name in names - before.get(folder, frozenset()):
            path = Path(folder) / name
            added[str(path.relative_to(root))] = path.read_bytes()
    return added


def _described(made: Any) -> Any:
    if isinstance(made, models.Model):
        return _Row(made._meta.label, made.pk)
    if isinstance(made, dict):
        return {key: _described(value) for key, value in made.items()}
    if isinstance(made, list | tuple):
        return type(made)(_described(value) for value in made)
    if made is None or isinstance(made, str | int | float | bool):
        return made
    raise TypeError(f"a kept world returns rows and plain values, not {type(made).__name__}")


def _revived(made: Any) -> Any:
    if isinstance(made, _Row):
        return apps.get_model(made.label)._base_manager.get(pk=made.pk)
    if isinstance(made, dict):
        return {key: _revived(value) for key, value in made.items()}
    if isinstance(made, list | tuple):
        return type(made)(_revived(value) for value in made)
    return made


def metric_registry() -> list[tuple[str, str, bool, str]]:
    """What a world that plans jobs reads besides the database: each registered metric's slug,
    configuration and whether it can score here (metrics_sync makes their rows)."""
    from capbench_eval import metrics as registry

    state = []
    for slug in registry.slugs():
        metric = registry.get(slug)
        availability = metric.availability()
        state.append((slug, metric.config_hash(), availability.available, availability.reason))
    return state
