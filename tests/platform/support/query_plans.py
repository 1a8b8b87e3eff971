"""How PostgreSQL would run a statement, for the tests that check an index serves it."""

from __future__ import annotations

from django.db import connection


def analyze_tables() -> None:
    """ANALYZE this database's own tables. A bare ANALYZE also takes the cluster's shared catalogs,
    whose locks the test's open transaction keeps: another test run's ANALYZE, in any database of the
    same server, would wait for this test to end."""
    with connection.cursor() as cursor:
        tables = ", ".join(connection.ops.quote_name(name) for name in connection.introspection.table_names(cursor))
        cursor.execute(f"ANALYZE {tables}")


def plan_of(sql: str, params=(), *, seqscan: bool = False) -> str:
    """EXPLAIN's text. Test tables are tiny, where a sequential scan is always cheapest: with
    `seqscan` off the planner shows whether an index gives the rows (what it picks at scale)."""
    analyze_tables()
    with connection.cursor() as cursor:
        if not seqscan:
            cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        found = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET enable_seqscan")
    return found
