"""Backups you can restore (plumbing/backups/, `manage.py backup` / `manage.py restore`): a populated
platform backed up and restored into an empty second PostgreSQL database and an empty media folder
has every table's rows (count and digest), every stored file (sha256) and every sequence back, and
serves the same boards with the same ETags; a damaged archive is refused naming its member before
anything is touched; a database or store holding data is refused without --force; rows and files
written while a backup runs never make it inconsistent; and a bucket store goes the same way."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import secrets
import subprocess
import sys
import tarfile
from pathlib import Path

import boto3
import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection
from moto import mock_aws
from psycopg import sql

from campaigns.models import CampaignResults
from campaigns.services.creation import CampaignSpec, campaign_board_set, campaign_create
from campaigns.tasks import refresh
from capbench.settings.files import object_storage
from catalog.models import Caption, Media
from leaderboards.citable import snapshot_freeze
from plumbing import backups, storage
from submissions.models import Submission
from submissions.services import MethodInfo, submission_create
from tests.platform.campaigns.helpers import in_turns, noisy_rubric
from tests.platform.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[3]

# One process serves the paths from each (database, media folder) in turn, as an anonymous visitor
# gets them (status, ETag, body digest): the same code, so the same deployment in the ETags (a file
# edited between two processes would change it), and nothing kept from the first database (the
# process's kept pages and its cache keys in Valkey are dropped before each).
SERVE = """
import hashlib, json, sys
import django
django.setup()
from django.core.cache import cache
from django.db import connections
from django.test import Client
from django.test.utils import override_settings, setup_test_environment
from plumbing import valkey
from leaderboards.caching import KEPT_HERE
setup_test_environment()
served = []
for database, media in json.loads(sys.argv[1]):
    connections.close_all()
    connections["default"].settings_dict["NAME"] = database
    KEPT_HERE.clear()
    for key in valkey.client().scan_iter(match=cache.key_prefix + ":*"):
        valkey.client().delete(key)
    found = {}
    with override_settings(MEDIA_ROOT=media):
        for path in sys.argv[2:]:
            answer = Client().get(path)
            body = b"".join(answer.streaming_content) if answer.streaming else answer.content
            found[path] = [answer.status_code, answer.get("ETag"), hashlib.sha256(body).hexdigest()]
    served.append(found)
print(json.dumps(served))
"""


def server_url(name: str) -> str:
    settings = connection.settings_dict
    password = f":{settings['PASSWORD']}" if settings["PASSWORD"] else ""
    return f"postgresql://{settings['USER']}{password}@{settings['HOST']}:{settings['PORT'] or 5432}/{name}"


@pytest.fixture
def empty_database():
    """A new, empty PostgreSQL database on the test server (no tables): restore makes the schema."""
    name = f"capbench_restore_{os.getpid()}_{secrets.token_hex(3)}"
    with psycopg.connect(server_url("postgres"), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield name
    with psycopg.connect(server_url("postgres"), autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def environment(database: str, state: Path) -> dict[str, str]:
    """A process on `database`, its file store in `state`/test-media (the test settings' MEDIA_ROOT),
    its cache keys and queues under a prefix of its own (never answered from another's kept pages).
    Without PYTEST_XDIST_WORKER, whose name the test settings add to MEDIA_ROOT."""
    return {
        **{name: value for name, value in os.environ.items() if name != "PYTEST_XDIST_WORKER"},
        "DATABASE_URL": server_url(database),
        "DJANGO_SETTINGS_MODULE": "capbench.settings.test",
        "CAPBENCH_STATE_DIR": str(state),
        "CAPBENCH_QUEUE_PREFIX": f"restore{secrets.token_hex(4)}-",
    }


def manage(env: dict[str, str], *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *command], env=env, cwd=ROOT, capture_output=True, text=True
    )


def serve(env: dict[str, str], sites: list[tuple[str, Path]], paths: list[str]) -> list[dict[str, list]]:
    """What each site (database, media folder) answers to each path; one process for all of them."""
    sites_json = json.dumps([[database, str(media)] for database, media in sites])
    env = {**env, "CAPBENCH_DB_POOL": "0"}  # a connection per use: the next one goes to the next database
    done = subprocess.run(
        [sys.executable, "-c", SERVE, sites_json, *paths], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def table_digests(database: str) -> dict[str, tuple[int, str]]:
    with psycopg.connect(server_url(database)) as db:
        return backups.table_digests(db)


def stored_files(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in root.rglob("*")
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(root).parts)
    }


def flip_byte(source: Path, target: Path, member: str) -> None:
    """A copy of the archive with one byte of `member`'s data changed (its header left intact)."""
    with tarfile.open(source) as archive:
        offset = archive.getmember(member).offset_data
    data = bytearray(source.read_bytes())
    data[offset + 10] ^= 0x01
    target.write_bytes(bytes(data))


@pytest.fixture
def platform(demo_dataset, store_pictures, scored_submission, settings, tmp_path):
    """A populated platform: the demo dataset with a stored picture per image, two public scored
    submissions (their uploaded files stored), a rating campaign with answers and results, and a
    citable snapshot of the board. Its store is `source/test-media`, as a process with
    CAPBENCH_STATE_DIR=source finds it."""
    settings.MEDIA_ROOT = tmp_path / "source" / "test-media"
    store_pictures(demo_dataset)
    users = get_user_model().objects
    careful = scored_submission(users.create_user("ada"), demo_dataset, ["rouge_l"], reference=0, method="Careful")
    careless = scored_submission(users.create_user("bob"), demo_dataset, ["rouge_l"], reference=3, method="Careless")
    staff = users.create_user("sam", is_staff=True)
    campaign = campaign_create(
        spec=CampaignSpec(
            slug="live", title="Live", dataset=demo_dataset, systems=[careful.system, careless.system], gold_rate=0
        ),
        created_by=staff,
    )
    campaign_board_set(campaign=campaign, on_board=True)  # the board's people column: the campaign's
    answered = in_turns(campaign, [users.create_user("ann"), users.create_user("ned")], noisy_rubric(campaign), 6)
    refresh(campaign.pk)
    snapshot = snapshot_freeze(dataset=demo_dataset, by="sam", note="for the paper")
    assert answered == 12
    assert CampaignResults.objects.filter(campaign=campaign).exists()
    assert snapshot.number == 1
    return {"dataset": demo_dataset, "campaign": campaign, "source": tmp_path / "source"}


@pytest.mark.slow
def test_a_backup_restores_into_an_empty_database_and_store_and_serves_the_same_boards(
    platform, empty_database, tmp_path
):
    archive = tmp_path / "backup.tar"
    call_command("backup", "--output", str(archive), stdout=io.StringIO())
    source_db = connection.settings_dict["NAME"]
    source_files = stored_files(platform["source"] / "test-media")
    assert len(source_files) >= 3  # the pictures, and each submission's uploaded file
    assert any(name.startswith("submissions/") for name in source_files)

    # A store holding a file that is not the archive's is refused, and nothing is done.
    restored = tmp_path / "restored"
    stray = restored / "test-media" / "ab" / "stray.png"
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"not from the archive")
    env = environment(empty_database, restored)
    refused = manage(env, "restore", str(archive))
    assert refused.returncode != 0
    assert "ab/stray.png" in refused.stderr
    assert "--force" in refused.stderr
    assert table_digests(empty_database) == {}  # no table made
    assert stored_files(restored / "test-media") == {
        "ab/stray.png": hashlib.sha256(b"not from the archive").hexdigest()
    }
    stray.unlink()

    done = manage(env, "restore", str(archive))
    assert done.returncode == 0, done.stderr[-3000:]

    # Every table: the same rows; every file: the same bytes under the same name.
    source, copy = table_digests(source_db), table_digests(empty_database)
    assert source == copy
    assert {"scoring_score", "campaigns_annotation", "leaderboards_citablesnapshot", "catalog_media"} <= set(copy)
    assert all(
        copy[table][0] > 0 for table in ("scoring_score", "campaigns_annotation", "leaderboards_citablesnapshot")
    )
    assert stored_files(restored / "test-media") == source_files
    referenced = set(Media.objects.exclude(stored_path="").values_list("stored_path", flat=True))
    referenced |= set(Submission.objects.values_list("stored_file", flat=True))
    assert referenced and referenced <= set(source_files)

    # Every sequence is past its rows: the next row gets a new id.
    with psycopg.connect(server_url(empty_database)) as db:
        owned = db.execute(
            "SELECT c.relname, a.attname, pg_get_serial_sequence(quote_ident(c.relname), a.attname) "
            "FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped "
            "AND pg_get_serial_sequence(quote_ident(c.relname), a.attname) IS NOT NULL"
        ).fetchall()
        assert len(owned) > 20
        for table, column, sequence in owned:
            largest = db.execute(
                sql.SQL("SELECT max({}) FROM {}").format(sql.Identifier(column), sql.Identifier(table))
            )
            largest_value = largest.fetchone()[0]
            if largest_value is not None:
                assert db.execute("SELECT nextval(%s)", [sequence]).fetchone()[0] > largest_value, table

    # The restored platform serves the same boards: the same ETags, the same JSON, CSV and files.
    slug, campaign = platform["dataset"].slug, platform["campaign"].slug
    media = Media.objects.filter(dataset=platform["dataset"]).exclude(stored_path="").order_by("pk").first()
    paths = [
        f"/datasets/{slug}/leaderboard/",
        f"/api/v1/leaderboards/{slug}/",
        f"/datasets/{slug}/leaderboard/?download=csv",
        f"/datasets/{slug}/leaderboard/snapshots/1.json",
        f"/datasets/{slug}/leaderboard/snapshots/1.csv",
        f"/campaigns/{campaign}/",
        f"/media-files/{media.pk}/",
    ]
    sites = [(source_db, platform["source"] / "test-media"), (empty_database, restored / "test-media")]
    before, after = serve(environment(source_db, tmp_path / "serving"), sites, paths)
    assert after == before
    assert {path: found[0] for path, found in before.items()} == dict.fromkeys(paths, 200)
    assert before[f"/datasets/{slug}/leaderboard/"][1] and before[f"/api/v1/leaderboards/{slug}/"][1]  # ETags

    # The restored database holds data now: a second restore is refused without --force, done with it.
    again = manage(env, "restore", str(archive))
    assert again.returncode != 0
    assert "the database holds data" in again.stderr
    assert "--force" in again.stderr
    forced = manage(env, "restore", "--force", str(archive))
    assert forced.returncode == 0, forced.stderr[-3000:]
    assert table_digests(empty_database) == source


def test_a_damaged_archive_is_refused_naming_its_member_before_anything_is_touched(
    demo_dataset, store_pictures, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path / "media"
    store_pictures(demo_dataset)
    archive = tmp_path / "backup.tar"
    call_command("backup", "--output", str(archive), stdout=io.StringIO())
    before = table_digests(connection.settings_dict["NAME"])
    files_before = stored_files(tmp_path / "media")
    with tarfile.open(archive) as opened:
        names = opened.getnames()
    picture = next(name for name in names if name.startswith("files/"))
    for member in ("database/catalog_item.copy.gz", picture, "manifest.json"):
        damaged = tmp_path / f"damaged-{member.replace('/', '-')}.tar"
        flip_byte(archive, damaged, member)
        # --force: even a restore allowed to replace everything checks the whole archive first.
        with pytest.raises(CommandError, match=f"member {member} is damaged"):
            call_command("restore", str(damaged), "--force")
    assert table_digests(connection.settings_dict["NAME"]) == before
    assert stored_files(tmp_path / "media") == files_before

    cut = tmp_path / "cut.tar"
    cut.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    with pytest.raises(CommandError, match="cut short|not a readable tar archive"):
        call_command("restore", str(cut), "--force")
    call_command("restore", str(archive), "--check", stdout=io.StringIO())  # the original is intact


def test_a_database_holding_data_is_refused_without_force(demo_dataset, tmp_path):
    archive = tmp_path / "backup.tar"
    call_command("backup", "--output", str(archive), stdout=io.StringIO())
    before = table_digests(connection.settings_dict["NAME"])
    with pytest.raises(CommandError, match=r"the database holds data \(.*catalog_\w+: \d+ rows.*--force"):
        call_command("restore", str(archive))
    assert table_digests(connection.settings_dict["NAME"]) == before
    with pytest.raises(CommandError, match="exists: choose a new name"):
        call_command("backup", "--output", str(archive))


def test_rows_and_files_written_while_a_backup_runs_leave_it_consistent(
    demo_dataset, scored_submission, settings, tmp_path, monkeypatch
):
    """The backup reads every table in one snapshot: a submission committed (its file stored, its
    rows written) while the first table is being dumped is in none of the dumped tables, and every
    file a dumped row names is in the archive."""
    settings.MEDIA_ROOT = tmp_path / "media"
    first = scored_submission(UserFactory(username="ada"), demo_dataset, ["rouge_l"])
    captions = Caption.objects.count()
    dump = backups.dump._dump_table
    written: list[Submission] = []

    def dump_while_writing(cursor, table, columns, path):
        if not written:  # during the first table's dump, from another connection (Django's own)
            written.append(
                submission_create(
                    owner=UserFactory(username="bob"),
                    dataset=demo_dataset,
                    file_name="late.json",
                    content=json.dumps(
                        [{"image_id": item.external_id, "caption": "late"} for item in demo_dataset.items.all()]
                    ).encode(),
                    method=MethodInfo("Late"),
                    metrics=["rouge_l"],
                    is_public=True,
                )
            )
        return dump(cursor, table, columns, path)

    monkeypatch.setattr(backups.dump, "_dump_table", dump_while_writing)
    archive = tmp_path / "backup.tar"
    call_command("backup", "--output", str(archive), stdout=io.StringIO())
    assert Submission.objects.count() == 2  # the late one committed while the backup ran

    checked = backups.archive_check(archive)
    tables = checked.tables
    assert tables["submissions_submission"]["rows"] == 1
    assert tables["catalog_caption"]["rows"] == captions
    with tarfile.open(archive) as opened:
        rows = rows_of(opened, "submissions_submission", tables["submissions_submission"]["columns"])
    assert [row["stored_file"] for row in rows] == [first.stored_file]
    assert "files/" + first.stored_file in checked.members  # what a dumped row names is there


def test_a_file_removed_while_a_backup_runs_is_skipped_and_named(
    demo_dataset, store_pictures, settings, tmp_path, monkeypatch
):
    """A stored file listed but gone when read (a failed upload's kept file removed, an account
    deletion's files) does not end the backup: it is left out and named in the manifest's
    `vanished`; one that a dumped row names is in its `missing` too, and backup and `restore
    --check` print it as a warning."""
    settings.MEDIA_ROOT = tmp_path / "media"
    store_pictures(demo_dataset)
    picture = Media.objects.filter(dataset=demo_dataset).exclude(stored_path="").first().stored_path
    listing = backups.stored.names

    def listed_then_removed():
        names = [*listing(), "ab/never-there.png"]
        (tmp_path / "media" / picture).unlink()  # after the listing, before it is read
        yield from names

    monkeypatch.setattr(backups.stored, "names", listed_then_removed)
    archive, out, err = tmp_path / "backup.tar", io.StringIO(), io.StringIO()
    call_command("backup", "--output", str(archive), stdout=out, stderr=err)

    manifest = backups.archive_check(archive).manifest
    assert sorted(manifest["vanished"]) == sorted([picture, "ab/never-there.png"])
    assert manifest["missing"] == [picture]  # the never-stored name is no row's
    assert "files/" + picture not in manifest["members"]
    assert manifest["counts"]["files"] == 0
    assert f"warning: stored file {picture} is named by a row" in err.getvalue()
    checked_out, checked_err = io.StringIO(), io.StringIO()
    call_command("restore", str(archive), "--check", stdout=checked_out, stderr=checked_err)
    assert "intact" in checked_out.getvalue()
    assert f"warning: stored file {picture} is named by a row" in checked_err.getvalue()


def test_any_safe_stored_name_round_trips_and_an_unsafe_member_is_refused(db, settings, tmp_path):
    """Restore checks a name only for safety (a media's name keeps its file's suffix, lower-cased:
    non-ASCII, spaces, ~), and backup checks each stored name the same way, so that what it writes
    restore takes back; a member that could leave the store is refused, named."""
    settings.MEDIA_ROOT = tmp_path / "media"
    stored = {"ab/ab12.jpég ~": b"a picture", "cd/Ünï code.png": b"another"}
    for number, (name, content) in enumerate(stored.items()):
        source = tmp_path / f"file-{number}"  # a local store links it: one source per file
        source.write_bytes(content)
        storage.put_path(name, source)

    unsafe = tmp_path / "media" / "ef" / "back\\slash.png"
    unsafe.parent.mkdir()
    unsafe.write_bytes(b"a name restore would refuse")
    refused = tmp_path / "refused.tar"
    with pytest.raises(backups.BackupError, match=r"stored file 'ef/back\\\\slash.png'.*backslash"):
        backups.backup_create(output=refused)
    assert not refused.exists()
    assert not list(tmp_path.glob(".refused.tar*"))
    unsafe.unlink()

    archive = tmp_path / "backup.tar"
    backups.backup_create(output=archive)
    checked = backups.archive_check(archive)
    assert sorted(checked.files) == sorted(stored)
    settings.MEDIA_ROOT = tmp_path / "restored"
    backups.files_restore(checked, lambda _: None)
    assert {name: (tmp_path / "restored" / name).read_bytes() for name in stored} == stored

    for member in ("files/../x", "/etc/x", "files/ab//x", "files/a\x1bb"):
        by_hand = tmp_path / "by-hand.tar"
        by_hand.unlink(missing_ok=True)
        data = b"outside"
        members = {member: {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}}
        manifest = json.dumps({"format": backups.FORMAT, "members": members, "tables": {}}).encode()
        line = f"{hashlib.sha256(manifest).hexdigest()}  manifest.json\n".encode()
        with tarfile.open(by_hand, "w", format=tarfile.PAX_FORMAT) as written:
            for name, content in ((member, data), ("manifest.json", manifest), ("manifest.json.sha256", line)):
                info = tarfile.TarInfo(name)
                info.size = len(content)
                written.addfile(info, io.BytesIO(content))
        with pytest.raises(CommandError, match=re.escape(f"member {member!r}: refused")):
            call_command("restore", str(by_hand))


def test_a_backup_never_replaces_a_file_that_appears_under_its_name_meanwhile(db, tmp_path, monkeypatch):
    archive = tmp_path / "backup.tar"
    dump = backups.dump._dump_table

    def dump_while_another_appears(cursor, table, columns, path):
        if not archive.exists():
            archive.write_bytes(b"another backup's archive")
        return dump(cursor, table, columns, path)

    monkeypatch.setattr(backups.dump, "_dump_table", dump_while_another_appears)
    with pytest.raises(CommandError, match="backup.tar appeared while the backup was written"):
        call_command("backup", "--output", str(archive), stdout=io.StringIO())
    assert archive.read_bytes() == b"another backup's archive"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["backup.tar"]  # no partial left


def rows_of(archive: tarfile.TarFile, table: str, columns: list[str]) -> list[dict[str, str]]:
    handle = archive.extractfile(f"database/{table}.copy.gz")
    assert handle is not None
    lines = gzip.decompress(handle.read()).decode().splitlines()
    return [dict(zip(columns, line.split("\t"), strict=True)) for line in lines]


@mock_aws
def test_a_bucket_store_is_backed_up_and_its_files_restored_into_another_bucket(settings, tmp_path, monkeypatch):
    """With the files in an S3-compatible bucket (CAPBENCH_S3_BUCKET), every object under the prefix
    goes into the archive by its name, and restore puts each back in the bucket the settings name."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="files")
    s3.create_bucket(Bucket="restored")
    settings.STORAGES = {**settings.STORAGES, "default": object_storage("files", None, "us-east-1", "lab")}
    stored = {"ab/ab12.png": b"a picture", "submissions/cd/cd34-0a1b.json": b"[]", "generated/ef/ef56.png": b"png"}
    for name, content in stored.items():
        source = tmp_path / "file"
        source.write_bytes(content)
        storage.put_path(name, source)
    s3.put_object(Bucket="files", Key="elsewhere/not-ours.png", Body=b"outside the prefix")
    archive = tmp_path / "backup.tar"
    backups.backup_create(output=archive)

    checked = backups.archive_check(archive)
    assert sorted(checked.files) == sorted(stored)
    assert checked.manifest["store"] == "bucket files"
    with tarfile.open(archive) as opened:
        assert {name: opened.extractfile("files/" + name).read() for name in stored} == stored

    settings.STORAGES = {**settings.STORAGES, "default": object_storage("restored", None, "us-east-1", "lab")}
    assert backups.files_restore(checked, lambda _: None) == (3, sum(map(len, stored.values())))
    restored = {
        found["Key"]: s3.get_object(Bucket="restored", Key=found["Key"])["Body"].read()
        for found in s3.list_objects_v2(Bucket="restored")["Contents"]
    }
    assert restored == {f"lab/{name}": content for name, content in stored.items()}
