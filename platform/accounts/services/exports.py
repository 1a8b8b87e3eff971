"""Everything CapBench holds about one person, as one zip archive (docs/security.md, "Your data"):
the account, each submission with its uploaded file, its captions' scores and its system numbers,
each submitted metric with its uploaded files, and the person's answers in live human evaluation
under the pseudonym each campaign knows them by. `manifest.json` lists every file with its size
and SHA-256; `README.txt` says what each is.

Only the person's own work is read, and through the visibility rule like any page: the scores a
hidden test set withholds from everyone but staff stay out (their system numbers are in), and a
caption they rated in a campaign is written out only while they may still see it. No secret goes
into the archive: the API token and the two-factor secret are said to exist, never given.

Written to a temporary file on disk (uploads are up to CAPBENCH_SUBMISSION_MAX_BYTES each), copied
from the file store in chunks, never whole in memory."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import re
import tempfile
import zipfile
from dataclasses import dataclass, field
from typing import IO, Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Q
from django.template.loader import render_to_string
from django.utils import timezone
from django_otp.plugins.otp_totp.models import TOTPDevice
from rest_framework.authtoken.models import Token

from accounts.services.mail import notice_send
from campaigns.models import AccountAddress, Annotation, Campaign
from campaigns.services.identity import pseudonym
from catalog.models import Caption
from catalog.visibility import metric_q
from plumbing import storage
from plumbing.spreadsheets import spreadsheet_row
from scoring.models import Score, SystemScore
from submissions.models import Submission
from workbench.models import MetricSubmission, UploadedFile

log = logging.getLogger(__name__)
FORMAT = "capbench-account-export/1"
CHUNK = 1024 * 1024
SCORE_COLUMNS = ["caption_id", "image_id", "caption", "metric", "version", "config_hash", "value", "error"]


@dataclass
class Archive:
    file: IO[bytes]  # the zip, read from its start
    name: str  # the download's file name
    counts: dict[str, int]


@dataclass
class _Writer:
    zip: zipfile.ZipFile
    files: list[dict] = field(default_factory=list)

    def add(self, path: str, data: bytes, what: str) -> None:
        self.zip.writestr(path, data)
        self.files.append({"path": path, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(), "what": what})

    def json(self, path: str, value: Any, what: str) -> None:
        self.add(path, json.dumps(value, indent=2, ensure_ascii=False, default=str).encode(), what)

    def stored(self, path: str, name: str, what: str) -> None:
        """A file from the store, copied in chunks; noted as missing when the store has lost it."""
        digest, size = hashlib.sha256(), 0
        try:
            with storage.open_stored(name) as source, self.zip.open(path, "w", force_zip64=True) as out:
                while chunk := source.read(CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
        except (OSError, ValueError) as error:  # a file missing from the store: say so, export the rest
            log.error("data export: stored file %s could not be read: %s", name, error)
            self.files.append({"path": path, "missing": True, "what": what})
            return
        self.files.append({"path": path, "bytes": size, "sha256": digest.hexdigest(), "what": what})

    def rows(self, path: str, head: list[str], rows, what: str) -> int:
        """A CSV written as it is read (every cell through plumbing.spreadsheets); how many rows."""
        digest, size, count = hashlib.sha256(), 0, 0
        with self.zip.open(path, "w", force_zip64=True) as out:
            buffer = io.StringIO()
            writer = csv.writer(buffer)
            writer.writerow(spreadsheet_row(head))
            for row in rows:
                writer.writerow(spreadsheet_row(row))
                count += 1
                if buffer.tell() > CHUNK:
                    size += _flush(buffer, out, digest)
            size += _flush(buffer, out, digest)
        self.files.append({"path": path, "bytes": size, "sha256": digest.hexdigest(), "what": what})
        return count


def _flush(buffer: io.StringIO, out: IO[bytes], digest) -> int:
    data = buffer.getvalue().encode()
    buffer.seek(0)
    buffer.truncate()
    digest.update(data)
    out.write(data)
    return len(data)


def account_export(*, user: User) -> Archive:
    """The archive of everything CapBench holds about `user` (see the module)."""
    spool = tempfile.TemporaryFile()  # noqa: SIM115 (handed to the response, which closes it once sent)
    try:
        return _written(spool, user)
    except BaseException:
        spool.close()
        raise


def _written(spool: IO[bytes], user: User) -> Archive:
    counts = {"submissions": 0, "scores": 0, "metric_submissions": 0, "metric_files": 0, "campaign_answers": 0}
    with zipfile.ZipFile(spool, "w", zipfile.ZIP_DEFLATED) as archive:
        writer = _Writer(archive)
        writer.json("account.json", _account(user), "your account")
        for submission in Submission.objects.filter(owner=user).select_related("dataset", "system").order_by("pk"):
            counts["submissions"] += 1
            counts["scores"] += _submission(writer, submission, user)
        for metric in MetricSubmission.objects.filter(owner=user).select_related("metric").order_by("pk"):
            counts["metric_submissions"] += 1
            counts["metric_files"] += _metric(writer, metric)
        answers = _answers(user)
        counts["campaign_answers"] = len(answers)
        writer.json("campaigns/answers.json", answers, "your answers in live human evaluation, by campaign pseudonym")
        now = timezone.now()
        writer.add("README.txt", render_to_string("accounts/export_readme.txt", {"user": user, "at": now}).encode(), "")
        manifest = {
            "format": FORMAT,
            "site": settings.SITE_URL,
            "account": user.get_username(),
            "created_at": now.isoformat(),
            "counts": counts,
            "files": writer.files,
        }
        archive.writestr("manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False))
    spool.seek(0)
    # A notice to the address: a download nobody asked for is a stolen session or password.
    notice_send(to=user.email, template="data_export", context={"username": user.get_username(), "at": now})
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", user.get_username()) or "account"
    return Archive(spool, f"capbench-{slug}-{now:%Y%m%d}.zip", counts)


def _account(user: User) -> dict:
    token = Token.objects.filter(user=user).first()
    addresses = list(
        AccountAddress.objects.filter(user=user).order_by("-last_seen").values_list("last_seen", flat=True)
    )
    return {
        "username": user.get_username(),
        "email": user.email,
        "date_joined": user.date_joined,
        "last_login": user.last_login,
        "is_staff": user.is_staff,
        "api_token": {"exists": token is not None, "created": token.created if token else None},
        "two_factor_devices": [
            {"name": device.name, "confirmed": device.confirmed, "created_at": device.created_at}
            for device in TOTPDevice.objects.filter(user=user).order_by("pk")
        ],
        # Keyed digests of the addresses the account signed in or annotated from (never the addresses):
        # the sock-puppet rule of live human evaluation reads them.
        "addresses_seen": {"count": len(addresses), "last_seen": addresses},
        "campaigns_invited_to": sorted(
            Campaign.objects.visible_to(user).filter(annotators=user).values_list("slug", flat=True)
        ),
    }


def _submission(writer: _Writer, submission: Submission, user: User) -> int:
    folder = f"submissions/{submission.pk}"
    metric_visible = metric_q(user, to_metric="metric_version__metric__")
    numbers = (
        SystemScore.objects.filter(system=submission.system)
        .filter(metric_visible)
        .order_by("metric_version__metric__slug", "metric_version_id")
        .values(
            "metric_version__metric__slug",
            "metric_version__version",
            "metric_version__config_hash",
            "value",
            "low",
            "high",
            "count",
            "images",
            "failed",
            "computed_at",
        )
    )
    writer.json(
        f"{folder}/submission.json",
        {
            "id": submission.pk,
            "dataset": submission.dataset.slug,
            "system": submission.system.slug,
            "method_name": submission.method_name,
            "description": submission.description,
            "paper_url": submission.paper_url,
            "code_url": submission.code_url,
            "metrics_asked": submission.metrics,
            "status": submission.status,
            "is_public": submission.is_public,
            "flags": submission.flags,
            "error": submission.error,
            "file_name": submission.file_name,
            "file_sha256": submission.file_sha256,
            "caption_count": submission.caption_count,
            "created_at": submission.created_at,
            "finished_at": submission.finished_at,
            "system_numbers": [
                {
                    "metric": row["metric_version__metric__slug"],
                    "version": row["metric_version__version"],
                    "config_hash": row["metric_version__config_hash"],
                    **{key: row[key] for key in ("value", "low", "high", "count", "images", "failed", "computed_at")},
                }
                for row in numbers
            ],
        },
        "the submission: what you entered, its status and its system numbers",
    )
    writer.stored(
        f"{folder}/upload/{_safe(submission.file_name)}", submission.stored_file, "the file as you uploaded it"
    )
    scores = (
        Score.objects.visible_to(user)
        .filter(metric_visible, caption__system_id=submission.system_id)
        .order_by("caption_id", "metric_version_id")
        .values_list(
            "caption_id",
            "caption__item__external_id",
            "caption__text",
            "metric_version__metric__slug",
            "metric_version__version",
            "metric_version__config_hash",
            "value",
            "error",
        )
        .iterator(chunk_size=5000)
    )
    return writer.rows(f"{folder}/scores.csv", SCORE_COLUMNS, scores, "each caption's score under each metric")


def _metric(writer: _Writer, submission: MetricSubmission) -> int:
    folder = f"metrics/{submission.pk}"
    files = list(
        UploadedFile.objects.filter(upload__submission=submission)
        .select_related("upload__metric_version", "dataset")
        .order_by("upload_id", "dataset__slug")
    )
    writer.json(
        f"{folder}/metric.json",
        {
            "id": submission.pk,
            "metric": submission.metric.slug,
            "name": submission.metric.name,
            "description": submission.metric.description,
            "citation": submission.metric.citation,
            "paper_url": submission.paper_url,
            "code_url": submission.code_url,
            "status": submission.status,
            "is_public": submission.is_public,
            "trained_on": sorted(submission.trained_on.values_list("slug", flat=True)),
            "created_at": submission.created_at,
            "uploads": [
                {
                    "upload": upload.pk,
                    "version": upload.metric_version.version,
                    "status": upload.status,
                    "error": upload.error,
                    "created_at": upload.created_at,
                    "files": [
                        {
                            "dataset": f.dataset.slug,
                            "file_name": f.file_name,
                            "file_sha256": f.file_sha256,
                            "scored": f.scored,
                            "candidates": f.candidates,
                            "path": f"{folder}/uploads/{upload.pk}/{f.dataset.slug}-{_safe(f.file_name)}",
                        }
                        for f in files
                        if f.upload_id == upload.pk
                    ],
                }
                for upload in submission.uploads.select_related("metric_version").order_by("pk")
            ],
        },
        "the submitted metric: its description, links and uploads",
    )
    for f in files:
        writer.stored(
            f"{folder}/uploads/{f.upload_id}/{f.dataset.slug}-{_safe(f.file_name)}",
            f.stored_file,
            "a scores file as you uploaded it",
        )
    return len(files)


def _answers(user: User) -> list[dict]:
    """The person's answered (or skipped) tasks in live campaigns: what they answered, when, and the
    pseudonym the campaign's judgments and exports carry; captions with their text while the person
    may still see them (a campaign shows public captions only, which may be withdrawn since).

    Blind annotation (docs/human-evaluation.md, "Blind annotation"): the task still shown is left
    out, and while a campaign is open its tasks carry nothing that tells a gold check from a real
    one (no gold mark, no image, no caption id: a decoy's id or image would name another image);
    they say so once it closes."""
    tasks = list(
        Annotation.objects.filter(annotator=user)
        .exclude(status=Annotation.Status.SHOWN)
        .select_related("campaign", "item")
        .order_by("campaign_id", "pk")
    )
    caption_ids = {pk for task in tasks for pk in (task.caption_id, task.other_id) if pk is not None}
    texts = dict(Caption.objects.visible_to(user).filter(pk__in=caption_ids).values_list("pk", "text"))
    campaigns = set(
        Campaign.objects.visible_to(user).filter(Q(pk__in={t.campaign_id for t in tasks})).values_list("pk", flat=True)
    )
    names: dict[int, str] = {}
    found = []
    for task in tasks:
        campaign = task.campaign
        if campaign.pk not in names:
            names[campaign.pk] = pseudonym(campaign, user.pk)
        visible = campaign.pk in campaigns
        told = campaign.status != Campaign.Status.OPEN  # open: nothing that tells a gold check
        found.append(
            {
                "campaign": campaign.slug if visible else None,
                "campaign_open": not told,
                "pseudonym": names[campaign.pk],
                "mode": campaign.mode,
                "status": task.status,
                "gold_check": task.is_gold if told else None,
                "image_id": task.item.external_id if visible and told else None,
                "caption_id": task.caption_id if told else None,
                "caption": texts.get(task.caption_id),
                "other_caption_id": task.other_id if told else None,
                "other_caption": texts.get(task.other_id) if task.other_id else None,
                "values": task.values,
                "winner": task.winner or None,
                "shown_at": task.shown_at,
                "answered_at": task.answered_at,
            }
        )
    return found


def _safe(name: str) -> str:
    """A file name safe inside an archive: no folders, no parent references, no control characters."""
    base = re.sub(r"[^A-Za-z0-9._ -]+", "_", name.replace("\\", "/").rsplit("/", 1)[-1]).strip(". ")
    return base[:120] or "file"
