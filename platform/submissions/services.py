"""Creating, dispatching, planning and withdrawing submissions, and their status as their scoring
jobs go. The whole file is checked before anything is stored; a valid one becomes System + Captions
+ Submission in one transaction."""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone
from django.utils.text import slugify

from capbench_eval.metrics import UnknownMetric, slugs
from catalog.models import Caption, Dataset, Item, System
from catalog.uploads.services import UploadKind
from plumbing import storage
from plumbing.errors import ApplicationError, TooManyRequests
from scoring.models import EvaluationJob
from scoring.queues import enqueue
from scoring.services.lifecycle import jobs_cancel
from scoring.services.metrics import metric_versions_current
from scoring.services.planning import job_plan, longest_first
from submissions.events import submission_changed
from submissions.formats import (
    Problems,
    SubmissionFileError,
    SubmittedCaption,
    file_name_problem,
    read_submission,
    text_fields_problem,
)
from submissions.integrity import caption_flags
from submissions.models import Submission
from submissions.notifications import outcome_notice_claim

log = logging.getLogger(__name__)
PLAN_TASK = "scoring.plan_submission"


@dataclass(frozen=True)
class MethodInfo:
    name: str
    description: str = ""
    paper_url: str = ""
    code_url: str = ""


class QuotaExceeded(TooManyRequests):
    """429: a daily or concurrent quota is full; `retry_at` is when the daily one allows the next."""

    # At the concurrent limit nobody knows when a job ends: a client is told to look again in a minute.
    CONCURRENT_RETRY_SECONDS = 60

    def __init__(self, message: str, retry_at: datetime | None = None):
        # Counted once, as it is raised: the body and the Retry-After header give the same seconds.
        wait = self.CONCURRENT_RETRY_SECONDS
        if retry_at is not None:
            wait = max(1, int((retry_at - timezone.now()).total_seconds()) + 1)
        super().__init__(message, retry_after=wait, extra={"retry_at": retry_at.isoformat()} if retry_at else None)
        self.retry_at = retry_at


class SubmissionRefused(ApplicationError, ValueError):
    """Metadata that cannot be accepted (the file's own problems are SubmissionFileError)."""


class DuplicateSubmission(ApplicationError):
    """409: the same file from the same owner for the same dataset, within the duplicate window."""

    status = 409

    def __init__(self, existing: Submission):
        super().__init__(
            f"you submitted this very file for {existing.dataset.slug} at "
            f"{existing.created_at:%Y-%m-%d %H:%M} UTC: it is submission {existing.pk}",
            extra={"submission": existing.pk},
            # the API's record of it and its page (api/urls.py, submissions/urls.py)
            links={"url": f"/api/v1/submissions/{existing.pk}/", "page": f"/submissions/{existing.pk}/"},
        )
        self.existing = existing


Upload = bytes | IO[bytes]


def submission_create(
    *,
    owner: User,
    dataset: Dataset,
    file_name: str,
    content: Upload,
    method: MethodInfo,
    metrics: list[str] | None = None,
    is_public: bool = False,
) -> Submission:
    """Check everything, then store System + Captions + Submission in one transaction. `content` is
    the file's bytes or a file object (an upload Django spooled to disk), copied to the store in
    chunks. A refused upload leaves no file behind. The captions' integrity checks (copied references,
    near-empty, constant) are stored on it as flags, refusing nothing (submissions.integrity)."""
    _check_method(method)
    if problem := file_name_problem(file_name):
        raise SubmissionRefused(problem)
    _check_metrics(metrics or [])
    with staged_upload(content, file_name) as staged:
        problems = Problems(file_name)
        file_format, captions = read_submission(
            file_name,
            staged.path.read_bytes(),
            problems=problems,
            max_caption_chars=settings.CAPBENCH_CAPTION_MAX_CHARS,
        )
        items = _matched_items(dataset, captions, problems)
        problems.raise_any()
        flags = caption_flags(
            ((c.caption, items[c.image_id].references) for c in captions),
            copy_share=settings.CAPBENCH_FLAG_COPY_SHARE,
            short_share=settings.CAPBENCH_FLAG_SHORT_SHARE,
        )
        _duplicate_check(owner, dataset, staged.digest)
        submission_quota_check(owner=owner)  # before the file is kept: a refused user fills no disk
        # In the store before the transaction: a crash never loses an upload, and a slow bucket never
        # holds the owner's lock. Refused below, the kept file is removed (staged_upload).
        stored = staged.keep(file_format)
        with transaction.atomic():
            submission_quota_check(owner=owner, lock=True)  # serialises this owner's uploads
            _duplicate_check(owner, dataset, staged.digest)
            system = System.objects.create(
                dataset=dataset,
                slug=_system_slug(method.name),
                name=method.name[:200],
                kind=System.Kind.SUBMISSION,
                description=method.description,
            )
            Caption.objects.bulk_create(
                [Caption(item=items[c.image_id], system=system, text=c.caption) for c in captions], batch_size=2000
            )
            submission = Submission.objects.create(
                owner=owner,
                dataset=dataset,
                system=system,
                method_name=method.name,
                description=method.description,
                paper_url=method.paper_url,
                code_url=method.code_url,
                metrics=list(metrics or []),
                file_name=Path(file_name).name[:300],
                file_format=file_format,
                file_sha256=staged.digest,
                file_size=staged.size,
                stored_file=stored,
                caption_count=len(captions),
                is_public=is_public,
                flags=flags,
            )
            transaction.on_commit(lambda: submission_dispatch(submission_id=submission.pk))
            transaction.on_commit(lambda: _changed(submission))
    return submission


def _duplicate_check(owner: User, dataset: Dataset, digest: str) -> None:
    window = settings.CAPBENCH_DUPLICATE_WINDOW
    if window <= 0:
        return
    existing = (
        Submission.objects.filter(
            owner=owner, dataset=dataset, file_sha256=digest, created_at__gt=timezone.now() - timedelta(seconds=window)
        )
        .exclude(status__in=[Submission.Status.WITHDRAWN, Submission.Status.FAILED])
        .select_related("dataset")
        .order_by("-created_at")
        .first()
    )
    if existing is not None:
        raise DuplicateSubmission(existing)


class StagedUpload:
    """An upload copied in chunks into the store's incoming folder, hashed on the way."""

    def __init__(self, path: Path, digest: str, size: int):
        self.path, self.digest, self.size = path, digest, size
        self.kept: str | None = None

    def keep(self, file_format: str) -> str:
        """Move it to its own name in the file store (one file per submission); returns the name."""
        name = f"submissions/{self.digest[:2]}/{self.digest}-{secrets.token_hex(4)}.{file_format}"
        storage.put_path(name, self.path, move=True)
        self.kept = name
        return name


@contextmanager
def staged_upload(content: Upload, file_name: str) -> Iterator[StagedUpload]:
    """The upload on disk (never more than one chunk in memory here), refused once over
    CAPBENCH_SUBMISSION_MAX_BYTES. On any exception the staged file, and a kept one, are removed."""
    limit = settings.CAPBENCH_SUBMISSION_MAX_BYTES
    incoming = Path(settings.MEDIA_ROOT) / "submissions" / ".incoming"
    incoming.mkdir(parents=True, exist_ok=True)
    path = incoming / f"{secrets.token_hex(8)}.part"
    digest, size = hashlib.sha256(), 0
    staged = None
    try:
        with path.open("wb") as out:
            for chunk in _chunks(content):
                size += len(chunk)
                if size > limit:
                    declared = getattr(content, "size", None) or (len(content) if isinstance(content, bytes) else size)
                    raise SubmissionFileError(file_name, [f"{declared:,} bytes, more than the limit of {limit:,}"])
                digest.update(chunk)
                out.write(chunk)
        staged = StagedUpload(path, digest.hexdigest(), size)
        yield staged
    except BaseException:
        if staged is not None and staged.kept is not None:
            storage.delete(staged.kept)
        raise
    finally:
        path.unlink(missing_ok=True)


def _chunks(content: Upload, size: int = 1024 * 1024) -> Iterator[bytes]:
    if isinstance(content, bytes):
        for start in range(0, len(content), size):
            yield content[start : start + size]
        return
    if hasattr(content, "chunks"):  # a Django UploadedFile: from memory or its temporary file
        yield from content.chunks(size)
        return
    while chunk := content.read(size):
        yield chunk


def submission_dispatch(*, submission_id: int) -> bool:
    """Hand the submission to the planning task; on a broker outage it stays queued (and
    undispatched) for the reaper to send again."""
    if not enqueue(PLAN_TASK, [submission_id]):
        return False
    Submission.objects.filter(pk=submission_id).update(dispatched_at=timezone.now())  # the latest send
    return True


def submissions_dispatch_pending(
    *, older_than: timedelta = timedelta(seconds=10), planning_lost_after: timedelta = timedelta(minutes=15)
) -> int:
    """Send every queued submission the broker never received (the web process met an outage), or
    whose planning seems lost: last sent long ago and no job of it has started. Planning again is
    harmless (it creates only what is missing); each send restarts the wait."""
    now = timezone.now()
    started = [EvaluationJob.Status.RUNNING, EvaluationJob.Status.DONE]
    pending = (
        Submission.objects.filter(status=Submission.Status.QUEUED, created_at__lte=now - older_than)
        .filter(Q(dispatched_at__isnull=True) | Q(dispatched_at__lte=now - planning_lost_after))
        .exclude(Exists(Submission.jobs_of(OuterRef("system_id")).filter(status__in=started)))
    )
    return sum(submission_dispatch(submission_id=pk) for pk in pending.values_list("pk", flat=True))


def submission_quota_check(*, owner: User, lock: bool = False) -> None:
    """QuotaExceeded when the owner is at the daily or concurrent limit, saying when to retry."""
    if lock:  # serialise one owner's concurrent uploads
        get_user_model().objects.select_for_update().filter(pk=owner.pk).first()
    now = timezone.now()
    mine = Submission.objects.filter(owner=owner)
    per_day = settings.CAPBENCH_SUBMISSIONS_PER_DAY
    recent = list(
        mine.filter(created_at__gt=now - timedelta(days=1)).order_by("created_at").values_list("created_at", flat=True)
    )
    if len(recent) >= per_day:
        retry_at = recent[len(recent) - per_day] + timedelta(days=1)
        raise QuotaExceeded(
            f"You have made {len(recent)} submissions in the last 24 hours (the limit is {per_day}); "
            f"the next one is allowed at {retry_at:%Y-%m-%d %H:%M} UTC.",
            retry_at,
        )
    concurrent = settings.CAPBENCH_SUBMISSIONS_CONCURRENT
    active = mine.filter(status__in=Submission.ACTIVE).count()
    if active >= concurrent:
        raise QuotaExceeded(
            f"{active} of your submissions are still being scored (the limit is {concurrent} at a time); "
            "the next one is allowed as soon as one of them finishes or is withdrawn."
        )


NAME_MAX_CHARS = 200  # Submission.method_name and System.name
URL_MAX_CHARS = 200  # Submission.paper_url / code_url


def _check_method(method: MethodInfo) -> None:
    if not method.name.strip():
        raise SubmissionRefused("field 'method name': required")
    if len(method.name) > NAME_MAX_CHARS:
        raise SubmissionRefused(f"field 'method name': at most {NAME_MAX_CHARS} characters")
    limit = settings.CAPBENCH_DESCRIPTION_MAX_CHARS
    if len(method.description) > limit:
        raise SubmissionRefused(f"field 'description': {len(method.description):,} characters, at most {limit:,}")
    for field, url in (("paper URL", method.paper_url), ("code URL", method.code_url)):
        if url and not url.startswith(("https://", "http://")):
            raise SubmissionRefused(f"field '{field}': must start with https:// or http://")
        if len(url) > URL_MAX_CHARS:
            raise SubmissionRefused(f"field '{field}': at most {URL_MAX_CHARS} characters")
    texts = {
        "method name": method.name,
        "description": method.description,
        "paper URL": method.paper_url,
        "code URL": method.code_url,
    }
    if problem := text_fields_problem(texts):
        raise SubmissionRefused(problem)


def _check_metrics(metrics: list[str]) -> None:
    unknown = sorted(set(metrics) - set(slugs()))
    if unknown:
        raise SubmissionRefused(
            f"field 'metrics': unknown metric(s) {', '.join(unknown)} (known: {', '.join(slugs())})"
        )


def _matched_items(dataset: Dataset, captions: list[SubmittedCaption], problems: Problems) -> dict[str, Item]:
    """Every caption's image must be the dataset's, once; every image needs its caption."""
    found = Item.objects.filter(dataset=dataset).only("id", "external_id", "references")  # (references: the checks)
    items = {item.external_id: item for item in found}
    first_place: dict[str, str] = {}
    for caption in captions:
        if caption.image_id not in items:
            problems.add(
                f"{caption.where}, field 'image_id': {caption.image_id!r} is not an image of "
                f"dataset {dataset.slug!r} (its ids look like {next(iter(items), 'nothing')!r})"
            )
        elif caption.image_id in first_place:
            problems.add(
                f"{caption.where}, field 'image_id': {caption.image_id!r} again "
                f"(first at {first_place[caption.image_id]}); give exactly one caption per image"
            )
        else:
            first_place[caption.image_id] = caption.where
    missing = [key for key in items if key not in first_place]
    if missing:
        shown = ", ".join(repr(key) for key in missing[:5])
        problems.add(
            f"{len(missing):,} of the dataset's {len(items):,} images have no caption "
            f"(e.g. {shown}); give exactly one caption per image"
        )
    return items


def _system_slug(name: str) -> str:
    return f"{slugify(name)[:80] or 'submission'}-{secrets.token_hex(3)}"


def _changed(submission: Submission) -> None:
    submission_changed.send(sender=Submission, dataset_id=submission.dataset_id)


def _scoring_stop(submission: Submission) -> None:
    """A withdrawn submission's scoring ends, in the withdrawal's transaction."""
    if submission.finished_at is None:
        submission.finished_at = timezone.now()
        submission.save(update_fields=["finished_at"])
    jobs_cancel(system_id=submission.system_id, reason="the submission was withdrawn")


# Publishing, hiding, withdrawing a submission (catalog.uploads.services), with what a submission adds.
SUBMISSIONS = UploadKind(
    Submission, noun="submission", kept="its file and scores", withdrawn=_scoring_stop, changed=_changed
)


def submission_plan(*, submission_id: int) -> list[EvaluationJob]:
    """The submission's jobs, one per metric (scoring.services.planning.job_plan); planning twice
    creates nothing twice."""
    submission = Submission.objects.select_related("system", "dataset").get(pk=submission_id)
    if submission.status == Submission.Status.WITHDRAWN:
        return []
    try:
        versions = longest_first(metric_versions_current(submission.metrics or None))
    except UnknownMetric as error:  # a metric asked for is gone from the code: retrying cannot help
        with transaction.atomic():
            Submission.objects.filter(pk=submission.pk).exclude(status=Submission.Status.WITHDRAWN).update(
                status=Submission.Status.FAILED, finished_at=timezone.now(), error=f"cannot be scored: {error.args[0]}"
            )
            outcome_notice_claim(submission_id=submission.pk, status=Submission.Status.FAILED)
        return []
    captions = list(Caption.objects.filter(system=submission.system).order_by("id").values_list("id", flat=True))
    jobs = [
        job_plan(
            purpose=EvaluationJob.Purpose.SUBMISSION,
            dataset=submission.dataset,
            system=submission.system,
            version=version,
            caption_ids=captions,
        )
        for version in versions
    ]
    Submission.objects.filter(pk=submission.pk, dispatched_at__isnull=True).update(dispatched_at=timezone.now())
    submission_refresh(submission_id=submission.pk)
    submission_changed.send(sender=Submission, dataset_id=submission.dataset_id)  # its cells now say "queued"
    return jobs


def submission_refresh(*, submission_id: int) -> Submission:
    """The submission's status from its jobs: running while any is open, then done (with the
    unavailable metrics noted) or failed when a metric failed; the owner is told of the outcome by
    e-mail, once (submissions.notifications)."""
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(pk=submission_id)
        if submission.status == Submission.Status.WITHDRAWN:
            return submission
        # Per metric its newest version's job: a failed re-scoring does not undo a finished submission.
        newest: dict[int, EvaluationJob] = {}
        for job in submission.jobs().select_related("metric_version__metric").order_by("metric_version__created_at"):
            if job.status != EvaluationJob.Status.FAILED or job.metric_version.metric_id not in newest:
                newest[job.metric_version.metric_id] = job
        jobs = list(newest.values())
        if not jobs:
            return submission
        if any(not job.is_final for job in jobs):
            if any(job.status == EvaluationJob.Status.RUNNING or job.done for job in jobs):
                submission.status = Submission.Status.RUNNING
                submission.started_at = submission.started_at or timezone.now()
        else:
            failed = [job for job in jobs if job.status == EvaluationJob.Status.FAILED]
            submission.status = Submission.Status.FAILED if failed else Submission.Status.DONE
            submission.error = "\n".join(f"{job.metric_version.metric.slug}: {job.error}" for job in failed)
            submission.started_at = submission.started_at or timezone.now()
            submission.finished_at = timezone.now()
        submission.save(update_fields=["status", "error", "started_at", "finished_at"])
        outcome_notice_claim(submission_id=submission.pk, status=submission.status)
    return submission


def submission_started(*, system_id: int, started_at: datetime) -> None:
    """A job of the system started (scoring.events.job_running): its submission, if queued, is running."""
    Submission.objects.filter(system_id=system_id, status=Submission.Status.QUEUED).update(
        status=Submission.Status.RUNNING, started_at=started_at
    )


def submission_job_ended(*, system_id: int) -> Submission | None:
    """A job of the system ended (scoring.events.job_ended): its submission's status follows
    (submission_refresh); None when no submission brought the system."""
    submission_id = Submission.objects.filter(system_id=system_id).values_list("pk", flat=True).first()
    return None if submission_id is None else submission_refresh(submission_id=submission_id)
