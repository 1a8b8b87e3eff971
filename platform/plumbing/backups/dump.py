"""Writing an archive (plumbing/backups/__init__.py describes its members).

Consistency: every table is read in ONE read-only REPEATABLE READ transaction (one snapshot, as
pg_dump takes), with ACCESS SHARE locks so that no migration changes a table under it. The store
is listed only once that snapshot is taken. A file is always stored before the row naming it
commits (a dataset's media, an upload, a generated picture: plumbing/storage.py's callers), and a
stored name is never replaced (names are content addresses). Files stored later may be in the
archive too, unnamed by any row: harmless. Files are removed, though: a failed upload's kept file,
an account deletion's files once its rows are gone (after the snapshot, perhaps). A file listed but
gone when read is skipped and named in the manifest's ``vanished``; and every name a dumped row
holds in a stored-file column (``STORED_NAME_COLUMNS``) that the archive lacks is named in its
``missing``, which backup and ``restore --check`` print as a warning: never a silent gap.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import secrets
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import psycopg
from django.db import connection
from psycopg import sql

from plumbing import storage
from plumbing.backups import schema, stored
from plumbing.backups.manifest import (
    CHUNK,
    DATABASE,
    FILES,
    FORMAT,
    MANIFEST,
    MANIFEST_SUM,
    BackupError,
    Hashing,
    Log,
    Summary,
    capbench_version,
    member_name_check,
    quiet,
)

GZIP_LEVEL = 3  # scores compress about 8 to 1 at level 3; higher levels cost time for a few per cent
# The columns that hold a stored file's name (plumbing/storage.py): a media's, an upload's as
# received (a submission's, a metric upload's). Found by name in whichever tables have them.
STORED_NAME_COLUMNS = frozenset({"stored_path", "stored_file"})


def backup_create(*, output: Path, log: Log = quiet) -> Summary:
    """Write the archive to `output` (refused when it exists). It appears under its name whole or
    not at all: written beside it under a temporary name, then linked to its name, which never
    replaces a file that appeared there meanwhile (a second backup with the same name)."""
    started = time.monotonic()
    output = output.resolve()
    if output.exists():
        raise BackupError(f"{output} exists: choose a new name (a backup never overwrites one)")
    root = stored.local_root()
    if root is not None and output.is_relative_to(root.resolve()):
        raise BackupError(f"{output} is inside the file store ({root}): the archive would hold itself")
    if not output.parent.is_dir():
        raise BackupError(f"{output.parent}: no such folder")
    summary = Summary()
    members: dict[str, dict[str, Any]] = {}
    partial = output.with_name(f".{output.name}.{secrets.token_hex(4)}.partial")
    try:
        _write(partial, summary, members, log)
        try:
            os.link(partial, output)
        except FileExistsError:
            raise BackupError(
                f"{output} appeared while the backup was written (another backup with the same name?): "
                "it is kept as it is; run again with a new name"
            ) from None
        except OSError as error:
            raise BackupError(f"{output}: the finished archive could not be linked to its name ({error})") from None
    finally:
        partial.unlink(missing_ok=True)
    summary.archive_bytes = output.stat().st_size
    summary.seconds = time.monotonic() - started
    return summary


def _write(partial: Path, summary: Summary, members: dict[str, dict[str, Any]], log: Log) -> None:
    """The whole archive into `partial` (a new file), synced to disk."""
    with (
        tarfile.TarFile(partial, "x", format=tarfile.PAX_FORMAT, copybufsize=CHUNK) as archive,
        tempfile.TemporaryDirectory(prefix=".capbench-backup-", dir=partial.parent) as scratch,
    ):
        with _snapshot() as cursor:
            state = _database_state(cursor)
            log(f"snapshot taken at {state['created_at']}: {len(state['tables'])} tables")
            for table, described in state["tables"].items():
                dumped = Path(scratch) / "table.copy.gz"
                rows = _dump_table(cursor, table, described["columns"], dumped)
                described["rows"] = rows
                member = f"{DATABASE}{table}.copy.gz"
                with dumped.open("rb") as handle:
                    members[member] = _add(archive, member, handle, dumped.stat().st_size)
                dumped.unlink()
                summary.tables += 1
                summary.rows += rows
            named = _named_files(cursor, state["tables"])
        # Listed after the snapshot was taken: every file its rows name was stored by then (the
        # module's docstring). Its transaction is over: copying a large store holds back no vacuum.
        for name in stored.names():
            _add_stored(archive, name, summary, members, log)
        archived = {member.removeprefix(FILES) for member in members if member.startswith(FILES)}
        summary.missing = sorted(named - archived)  # the command prints each as a warning
        log(f"{summary.rows:,} rows from {summary.tables} tables, {summary.files:,} files")
        manifest = {
            "format": FORMAT,
            "capbench_version": capbench_version(),
            **state,
            "store": stored.description(),
            "counts": {"tables": summary.tables, "rows": summary.rows, "files": summary.files},
            "members": members,
            "vanished": summary.vanished,
            "missing": summary.missing,
        }
        text = json.dumps(manifest, indent=1, sort_keys=True).encode()
        _add(archive, MANIFEST, io.BytesIO(text), len(text))
        line = f"{hashlib.sha256(text).hexdigest()}  {MANIFEST}\n".encode()
        _add(archive, MANIFEST_SUM, io.BytesIO(line), len(line))
        archive.close()
        with partial.open("rb+") as written:
            os.fsync(written.fileno())


def _add_stored(
    archive: tarfile.TarFile, name: str, summary: Summary, members: dict[str, dict[str, Any]], log: Log
) -> None:
    """One stored file into the archive; one removed since it was listed is named in `vanished`."""
    try:
        member_name_check(FILES + name)
    except BackupError as error:
        raise BackupError(f"stored file {name!r}: restore could not store it back ({error})") from None
    try:
        with storage.open_stored(name) as handle:
            size = stored.opened_size(handle, name)
            members[FILES + name] = _add(archive, FILES + name, handle, size)
    except FileNotFoundError:  # removed since it was listed (an upload failed, an account deleted)
        summary.vanished.append(name)
        log(f"stored file {name}: removed after it was listed; not in the archive")
        return
    summary.files += 1
    summary.file_bytes += size


@contextmanager
def _snapshot() -> Iterator[psycopg.Cursor]:
    """A cursor in one read-only REPEATABLE READ transaction on a connection of its own (the
    database Django is configured for), so that every table is read as of one moment."""
    params = connection.get_connection_params()
    with psycopg.connect(**params) as raw:
        raw.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        raw.read_only = True
        with raw.transaction(), raw.cursor() as cursor:
            yield cursor


def _database_state(cursor: psycopg.Cursor) -> dict[str, Any]:
    """Inside the snapshot: its time, the server, the tables (foreign keys' targets first) with
    their columns and sequences, each locked against schema changes, and the migrations applied."""
    cursor.execute("SELECT now(), current_setting('server_version'), pg_current_snapshot()::text")
    created_at, server, snapshot = cursor.fetchone()  # type: ignore[misc]
    tables = schema.tables(cursor)
    if tables:
        cursor.execute(
            sql.SQL("LOCK TABLE {} IN ACCESS SHARE MODE").format(sql.SQL(", ").join(map(sql.Identifier, tables)))
        )
    described: dict[str, dict[str, Any]] = {}
    for table in tables:
        described[table] = {
            "columns": schema.columns(cursor, table),
            "sequences": schema.sequences(cursor, table),
            "rows": 0,
        }
    migrations: list[list[str]] = []
    if "django_migrations" in described:
        cursor.execute("SELECT app, name FROM django_migrations ORDER BY app, name")
        migrations = [list(row) for row in cursor.fetchall()]
    return {
        "created_at": created_at.isoformat(),
        "postgresql": server,
        "snapshot": snapshot,
        "tables": described,
        "migrations": migrations,
    }


def _named_files(cursor: psycopg.Cursor, tables: dict[str, dict[str, Any]]) -> set[str]:
    """Inside the snapshot: every stored file's name that a dumped row holds (STORED_NAME_COLUMNS)."""
    named: set[str] = set()
    for table, described in tables.items():
        for column in sorted(STORED_NAME_COLUMNS & set(described["columns"])):
            cursor.execute(
                sql.SQL("SELECT DISTINCT {0} FROM {1} WHERE {0} <> ''").format(
                    sql.Identifier(column), sql.Identifier(table)
                )
            )
            named.update(row[0] for row in cursor.fetchall())
    return named


def _dump_table(cursor: psycopg.Cursor, table: str, columns: list[str], path: Path) -> int:
    """The table's rows, COPY text format, gzip-compressed into `path`; returns how many."""
    # The query form, which a partitioned table needs too (COPY of the table itself refuses one).
    statement = sql.SQL("COPY (SELECT {} FROM {}) TO STDOUT").format(
        sql.SQL(", ").join(map(sql.Identifier, columns)), sql.Identifier(table)
    )
    with (
        path.open("wb") as raw,
        gzip.GzipFile(
            fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL, mtime=0
        ) as out,  # the same rows, the same bytes
        cursor.copy(statement) as copy,
    ):
        for block in copy:
            out.write(block)
    return cursor.rowcount  # COPY's own count of the rows it sent


def _add(archive: tarfile.TarFile, name: str, handle: IO[bytes], size: int) -> dict[str, Any]:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, int(time.time()), 0o644
    hashing = Hashing(handle)
    try:
        archive.addfile(info, hashing)
    except OSError as error:  # e.g. a stored file shorter than its listed size
        raise BackupError(f"{name}: {error}") from None
    return {"sha256": hashing.digest.hexdigest(), "size": size}
