"""The database's schema as a backup reads it: its tables in load order, each table's columns
and sequences, and a digest of every table's rows (a restore drill's check)."""

from __future__ import annotations

import psycopg
from psycopg import sql


def tables(cursor: psycopg.Cursor) -> list[str]:
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


def columns(cursor: psycopg.Cursor, table: str) -> list[str]:
    """The columns COPY can write back (generated ones are computed again)."""
    cursor.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
        "AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
        [sql.Identifier(table).as_string(cursor)],
    )
    return [row[0] for row in cursor.fetchall()]


def sequences(cursor: psycopg.Cursor, table: str) -> dict[str, list]:
    """{column: [last_value, is_called]} of the sequences the table's columns own (serial, identity)."""
    found: dict[str, list] = {}
    for column in columns(cursor, table):
        cursor.execute("SELECT pg_get_serial_sequence(%s, %s)", [sql.Identifier(table).as_string(cursor), column])
        sequence = cursor.fetchone()[0]  # type: ignore[index]
        if sequence:
            cursor.execute(sql.SQL("SELECT last_value, is_called FROM {}").format(sql.SQL(sequence)))
            found[column] = list(cursor.fetchone())  # type: ignore[arg-type]
    return found


def table_digests(db: psycopg.Connection) -> dict[str, tuple[int, str]]:
    """Per table of the connection's schema: its rows and the md5 of all of them as text (columns by
    name, rows sorted). Two databases with equal digests hold the same rows: a restore drill's check
    (tests/platform/plumbing/test_backup.py, bench/backup.py)."""
    found: dict[str, tuple[int, str]] = {}
    names = [row[0] for row in db.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]
    for table in sorted(names):
        by_name = [
            row[0]
            for row in db.execute(
                "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
                "AND NOT attisdropped ORDER BY attname",
                [sql.Identifier(table).as_string(db)],
            )
        ]
        row = sql.SQL("ROW({})::text").format(sql.SQL(", ").join(map(sql.Identifier, by_name)))
        query = sql.SQL(
            "SELECT count(*), md5(coalesce(string_agg(r, E'\\n' ORDER BY r), '')) FROM (SELECT {} AS r FROM {}) x"
        ).format(row, sql.Identifier(table))
        count, digest = db.execute(query).fetchone()  # type: ignore[misc]
        found[table] = (count, digest)
    return found
