"""Reading an archive back (plumbing/backups/__init__.py describes its members).

Restore checks every member against the manifest before it touches anything, refuses a
database or store that holds data (``--force`` replaces it), stores the files (content-addressed,
so a repeated restore adds nothing twice), migrates the database to the archive's migration
state, loads every table in one transaction (all or nothing), sets each sequence past its rows,
then migrates on to this code's latest state if the code is newer than the archive.
"""

from __future__ import annotations

import gzip
import re
import shutil
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
import redis
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor
from psycopg import sql

from plumbing import storage, valkey
from plumbing.backups import schema, stored
from plumbing.backups.manifest import (
    CHUNK,
    DATABASE,
    FILES,
    Archive,
    BackupError,
    Log,
    Summary,
    archive_check,
    archive_warnings,
    capbench_version,
    quiet,
)

# Rows the migrations write themselves: a database holding only these is empty (restore replaces them).
MIGRATION_ROWS = frozenset({"django_migrations", "django_content_type", "auth_permission", "scoring_resultsrevision"})


def backup_restore(*, path: Path, force: bool = False, log: Log = quiet) -> Summary:
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
    return [name for name in stored.names() if name not in names]


def files_restore(checked: Archive, log: Log) -> tuple[int, int]:
    """Every file member stored under its name (one already there is kept: names are content
    addresses). Staged beside the store's files when the store is a local folder (moved into place
    in one step), else in a temporary folder and uploaded."""
    root = stored.local_root()
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
    present = set(_schema_tables())
    for table in checked.tables:
        if table not in present:
            raise BackupError(f"member {DATABASE}{table}.copy.gz: the database has no table {table} after migrating")
    rows_loaded = 0
    with transaction.atomic(), connection.cursor() as wrapper, tarfile.open(checked.path, "r:") as archive:
        cursor = wrapper.cursor  # psycopg's own, for COPY
        _migrations_check(cursor, checked.manifest)
        tables = list(checked.tables)
        cursor.execute(sql.SQL("TRUNCATE {}").format(sql.SQL(", ").join(map(sql.Identifier, tables))))
        cursor.execute("SET LOCAL maintenance_work_mem = '256MB'")
        foreign_keys, indexes = _checks_dropped(cursor, tables)
        for table, described in checked.tables.items():
            rows_loaded += _table_load(cursor, archive, checked, table, described)
        _checks_made_again(cursor, foreign_keys, indexes)
    log(f"{rows_loaded:,} rows in {len(checked.tables)} tables loaded")
    return rows_loaded


def _migrations_check(cursor: psycopg.Cursor, manifest: dict[str, Any]) -> None:
    applied = _applied_migrations(cursor)
    archived = {tuple(row) for row in manifest["migrations"]}
    if applied != archived:
        missing = sorted(archived ^ applied)[0]
        raise BackupError(f"the database's migrations differ from the archive's after migrating ({'.'.join(missing)})")


def _checks_dropped(
    cursor: psycopg.Cursor, tables: list[str]
) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    """The tables' foreign keys and plain indexes dropped (returned, to be made again) and their
    user triggers turned off."""
    # As pg_restore does: the rows first, then the foreign keys and plain indexes made again, one
    # pass each instead of a check and an index entry per row (1M scores: twice as fast). User
    # triggers are off while the rows come in: they come as they were, trigger-filled columns too.
    foreign_keys = _foreign_keys(cursor, tables)
    for table, name, _ in foreign_keys:
        cursor.execute(sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(sql.Identifier(table), sql.Identifier(name)))
    indexes = _plain_indexes(cursor, tables)
    for name, _ in indexes:
        cursor.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
    for table in tables:
        cursor.execute(sql.SQL("ALTER TABLE {} DISABLE TRIGGER USER").format(sql.Identifier(table)))
    return foreign_keys, indexes


def _table_load(
    cursor: psycopg.Cursor, archive: tarfile.TarFile, checked: Archive, table: str, described: dict[str, Any]
) -> int:
    """One table's rows copied in (as many as the manifest says), its sequences set and its user
    triggers back on; the rows loaded."""
    member = f"{DATABASE}{table}.copy.gz"
    columns = described["columns"]
    if set(schema.columns(cursor, table)) != set(columns):
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
        raise BackupError(f"member {member}: {cursor.rowcount:,} rows loaded, the manifest says {described['rows']:,}")
    for column, (last_value, is_called) in described["sequences"].items():
        _sequence_set(cursor, table, column, last_value, is_called)
    cursor.execute(sql.SQL("ALTER TABLE {} ENABLE TRIGGER USER").format(sql.Identifier(table)))
    return described["rows"]


def _checks_made_again(
    cursor: psycopg.Cursor, foreign_keys: list[tuple[str, str, str]], indexes: list[tuple[str, str]]
) -> None:
    """The dropped indexes, then foreign keys, made again: each checks the loaded rows."""
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
