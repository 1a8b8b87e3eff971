"""Submitting a metric's scores, and what follows: the correlations with people, publishing and
withdrawing. The whole upload (every file) is checked before anything is stored; a valid one becomes,
in one transaction, a metric version whose Score rows are the uploaded numbers."""

from __future__ import annotations

import hashlib
import logging
import secrets
import unicodedata
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from capbench_eval.metrics import get as registered
from capbench_eval.metrics import slugs as registered_slugs
from catalog.models import Dataset
from catalog.services.candidates import caption_keys, is_meta_evaluation
from catalog.uploads.services import UploadKind
from catalog.visibility import references_visible
from plumbing.errors import ApplicationError, Problem
from scoring.models import EvaluationJob, Metric, MetricVersion, Score
from scoring.queues import enqueue
from scoring.services.correlations import dataset_correlations, dataset_significance
from submissions.formats import Problems, SubmissionFileError, file_name_problem, text_fields_problem
from submissions.services import QuotaExceeded, StagedUpload, Upload, staged_upload
from workbench.formats import SubmittedScore, read_scores
from workbench.models import FAMILY, MetricSubmission, MetricUpload, UploadedFile

log = logging.getLogger(__name__)
CORRELATE_TASK = "workbench.correlate_upload"
SIGNIFICANCE_TASK = "workbench.significance"
NAME_MAX = 100
URL_MAX_CHARS = 200  # MetricSubmission.paper_url / code_url
# Paths under /metrics/ that are pages of their own, never a metric's slug.
RESERVED_SLUGS = frozenset({"all", "snapshots"})
SHOWN_IDS = 5  # missing ids quoted in a refusal


@dataclass(frozen=True)
class MetricInfo:
    name: str
    description: str = ""
    paper_url: str = ""
    code_url: str = ""
    higher_is_better: bool = True
    reference_free: bool = False


@dataclass(frozen=True)
class ScoresFile:
    dataset: Dataset
    file_name: str
    content: Upload


class MetricRefused(ApplicationError, ValueError):
    """Metadata or a choice that cannot be accepted (a file's own problems are ScoresRefused)."""


class ScoresRefused(ApplicationError, ValueError):
    """One or more files cannot be accepted; `errors` holds each file's SubmissionFileError (the
    API's body lists every problem under "scores", each after its file's name)."""

    detail_key = "scores"

    def __init__(self, errors: list[SubmissionFileError]):
        self.errors = errors
        located = [Problem(problem.what, where=error.file_name) for error in errors for problem in error.located]
        super().__init__("\n".join(str(error) for error in errors), located=located)

    @property
    def problems(self) -> list[str]:
        return self.lines()


@dataclass
class CheckedFile:
    scores: ScoresFile
    staged: StagedUpload
    file_format: str
    values: dict[int, float]  # caption pk -> score
    candidates: int
    stored: str = ""
    missing: list[str] = field(default_factory=list)


def metric_submit(
    *,
    owner: User,
    info: MetricInfo,
    files: list[ScoresFile],
    is_public: bool = False,
    trained_on: list[Dataset] | None = None,
) -> MetricUpload:
    """Check every file, then store the metric (new, or a new version of the owner's metric of the
    same name), its scores and the files in one transaction; the correlations follow in a task."""
    _check_info(info)
    _check_choices(owner, files)
    existing = _existing(owner, info)
    with ExitStack() as stack:
        checked = _checked_files(stack, files)
        digest = _digest(checked)
        _refuse_same_scores(existing, digest)
        upload_quota_check(owner=owner)
        for entry in checked:  # in the store before the transaction; removed by staged_upload if refused
            entry.stored = entry.staged.keep(f"scores.{entry.file_format}")
        try:
            upload = _store(owner, info, checked, digest, is_public=is_public, trained_on=trained_on)
        except IntegrityError:  # another upload of the same name (a double click) got there first
            raise MetricRefused(f"another upload of {info.name.strip()!r} was being stored: try again") from None
    log.info("metric %s: upload %s stored (%d files)", upload.submission.metric.slug, upload.pk, len(checked))
    return upload


def _store(
    owner: User,
    info: MetricInfo,
    checked: list[CheckedFile],
    digest: str,
    *,
    is_public: bool,
    trained_on: list[Dataset] | None,
) -> MetricUpload:
    with transaction.atomic():
        upload_quota_check(owner=owner, lock=True)  # serialises this owner's uploads
        existing = _existing(owner, info)  # again, under the lock: a concurrent upload may have made it
        _refuse_same_scores(existing, digest)
        published = existing is not None and is_public and not existing.is_public
        submission = _submission(owner, info, existing, is_public=is_public)
        if trained_on is not None:
            submission.trained_on.set(trained_on)
        upload = _upload(submission, checked, digest)
        transaction.on_commit(lambda: upload_dispatch(upload_id=upload.pk))
        if published:  # its other datasets' public clusters take it in too
            transaction.on_commit(lambda: significance_dispatch(submission_id=submission.pk))
    return upload


def _check_choices(owner: User, files: list[ScoresFile]) -> None:
    """At least one file, each with an acceptable name, for distinct datasets with human judgments
    whose references the owner may see."""
    if not files:
        raise MetricRefused("no scores file: upload one file of scores per dataset")
    for scores in files:
        if problem := file_name_problem(scores.file_name):
            raise MetricRefused(f"{scores.dataset.slug}: {problem}")
    datasets = [scores.dataset for scores in files]
    if len({dataset.pk for dataset in datasets}) < len(datasets):
        raise MetricRefused("one file per dataset: a dataset was given twice")
    for dataset in datasets:
        if not is_meta_evaluation(dataset):
            raise MetricRefused(f"{dataset.slug} has no human judgments: a metric is compared with people on another")
        if not references_visible(dataset, owner):
            raise MetricRefused(
                f"{dataset.slug} is a hidden test set: its judgments are not open to comparison by uploaded scores"
            )


def _checked_files(stack: ExitStack, files: list[ScoresFile]) -> list[CheckedFile]:
    """Every file staged (until `stack` closes) and read; ScoresRefused with each file's problems."""
    checked, errors = [], []
    for scores in files:
        try:
            staged = stack.enter_context(staged_upload(scores.content, scores.file_name))
            checked.append(_checked(scores, staged))
        except SubmissionFileError as error:
            where = _where(scores)
            errors.append(error if error.file_name == where else SubmissionFileError(where, error.problems))
    if errors:
        raise ScoresRefused(errors)
    return checked


def _refuse_same_scores(existing: MetricSubmission | None, digest: str) -> None:
    """MetricRefused where the owner's metric of that name already has a version of these scores."""
    if existing is None:
        return
    same = existing.metric.versions.filter(config_hash=digest[:16]).first()
    if same is not None:
        raise MetricRefused(f"these scores are {existing.metric.slug} version {same.version} already")


def _check_info(info: MetricInfo) -> None:
    name = info.name.strip()
    if not name:
        raise MetricRefused("the metric needs a name")
    if len(name) > NAME_MAX:
        raise MetricRefused(f"the name is {len(name)} characters long; at most {NAME_MAX}")
    if len(info.description) > settings.CAPBENCH_DESCRIPTION_MAX_CHARS:
        raise MetricRefused(
            f"the description is {len(info.description):,} characters long; "
            f"at most {settings.CAPBENCH_DESCRIPTION_MAX_CHARS:,}"
        )
    for label, url in (("paper URL", info.paper_url), ("code URL", info.code_url)):
        if url and not url.startswith(("https://", "http://")):
            raise MetricRefused(f"the {label} must start with https:// or http://")
        if len(url) > URL_MAX_CHARS:
            raise MetricRefused(f"the {label} is {len(url):,} characters long; at most {URL_MAX_CHARS}")
    texts = {"name": info.name, "description": info.description, "paper URL": info.paper_url, "code URL": info.code_url}
    if problem := text_fields_problem(texts):
        raise MetricRefused(problem)
    builtin = builtin_name_of(name)
    if builtin:
        raise MetricRefused(
            f"field 'name': {name!r} reads as the built-in metric {builtin} "
            "(names are compared ignoring case, spaces and punctuation); choose a name of its own"
        )


def _normalised(name: str) -> str:
    """A name as compared with the built-in metrics': NFKC, case folded, letters and digits only."""
    return "".join(char for char in unicodedata.normalize("NFKC", name).casefold() if char.isalnum())


def builtin_name_of(name: str) -> str:
    """The built-in metric (its name and slug, "BLEU-4 (bleu_4)") whose name or slug `name` reads as
    once case, spaces and punctuation are ignored ("BLEU-4", "bleu 4", "Bleu_4"); "" when none. Read
    from the registry and from the store's metrics that no researcher uploaded (one the code no longer
    has keeps its name)."""
    wanted = _normalised(name)
    if not wanted:
        return ""
    known = {slug: registered(slug).name for slug in registered_slugs()}
    known.update(Metric.objects.filter(submission__isnull=True).values_list("slug", "name"))
    for slug, label in known.items():
        if wanted in (_normalised(slug), _normalised(label)):
            return f"{label} ({slug})"
    return ""


def _existing(owner: User, info: MetricInfo) -> MetricSubmission | None:
    found = (
        MetricSubmission.objects.filter(owner=owner, metric__name=info.name.strip()).select_related("metric").first()
    )
    if found is None:
        return None
    if found.status == MetricSubmission.Status.WITHDRAWN:
        raise MetricRefused(f"you withdrew {found.metric.slug}; upload under another name")
    if found.metric.higher_is_better != info.higher_is_better:
        said = "higher" if found.metric.higher_is_better else "lower"
        raise MetricRefused(
            f"{found.metric.slug} was submitted as {said} is better; a metric read the other way needs another name"
        )
    if found.metric.needs != _needs(info):
        said = "reference-free" if not found.metric.needs else "reference-based"
        raise MetricRefused(
            f"{found.metric.slug} was submitted as {said}; a different kind of metric needs another name"
        )
    return found


def _needs(info: MetricInfo) -> list[str]:
    return [] if info.reference_free else ["references"]


def _checked(scores: ScoresFile, staged: StagedUpload) -> CheckedFile:
    """The file's scores matched to the dataset's candidates, every problem located."""
    dataset = scores.dataset
    problems = Problems(_where(scores))
    file_format, entries = read_scores(scores.file_name, staged.path.read_bytes(), problems)
    keys = caption_keys(dataset)
    values: dict[int, float] = {}
    first: dict[str, str] = {}
    for entry in entries:
        _match(entry, keys, first, values, problems)
    missing = [key for key in keys if key not in first]
    need = settings.CAPBENCH_METRIC_MIN_COVERAGE
    if entries and keys and len(missing) > len(keys) * (1 - need):
        quoted = ", ".join(missing[:SHOWN_IDS]) + (" …" if len(missing) > SHOWN_IDS else "")
        problems.add(
            f"{len(missing):,} of the dataset's {len(keys):,} candidates have no score "
            f"({len(values) / len(keys):.1%} covered; at least {need:.0%} must be): {quoted}"
        )
    problems.raise_any()
    return CheckedFile(scores, staged, file_format, values, len(keys), missing=missing)


def _where(scores: ScoresFile) -> str:
    return f"{scores.file_name} ({scores.dataset.slug})"


def _match(
    entry: SubmittedScore, keys: dict[str, int], first: dict[str, str], values: dict[int, float], problems: Problems
) -> None:
    if entry.caption_id in first:
        problems.add(
            f"{entry.where}, field 'caption_id': {entry.caption_id} again (first on {first[entry.caption_id]})"
        )
        return
    pk = keys.get(entry.caption_id)
    if pk is None:
        problems.add(
            f"{entry.where}, field 'caption_id': {entry.caption_id[:60]!r} is not a candidate of this dataset "
            "(the ids are in its candidates file)"
        )
        return
    first[entry.caption_id] = entry.where
    values[pk] = entry.score


def _digest(checked: list[CheckedFile]) -> str:
    digest = hashlib.sha256()
    for entry in sorted(checked, key=lambda entry: entry.scores.dataset.slug):
        digest.update(f"{entry.scores.dataset.slug}:{entry.staged.digest}\n".encode())
    return digest.hexdigest()


def _submission(
    owner: User, info: MetricInfo, existing: MetricSubmission | None, *, is_public: bool
) -> MetricSubmission:
    fields = {
        "name": info.name.strip(),
        "description": info.description.strip(),
        "higher_is_better": info.higher_is_better,
        "needs": _needs(info),
        "citation": info.paper_url,
    }
    if existing is not None:
        metric = Metric.objects.select_for_update().get(pk=existing.metric_id)
        for name, value in fields.items():
            setattr(metric, name, value)
        metric.save()
        existing.paper_url, existing.code_url = info.paper_url, info.code_url
        existing.is_public = existing.is_public or is_public
        existing.save()
        return existing
    metric = Metric.objects.create(
        slug=_metric_slug(info.name),
        family=FAMILY,
        queue="cpu",
        points=1.0,  # the submitter's own scale
        is_registered=False,
        available=True,
        **fields,
    )
    return MetricSubmission.objects.create(
        owner=owner, metric=metric, paper_url=info.paper_url, code_url=info.code_url, is_public=is_public
    )


def _metric_slug(name: str) -> str:
    """The name's slug and a random suffix, every time ("my-metric-3f9a1c"): a bare slug for a free
    name and a suffixed one for a taken name would tell anyone that someone, perhaps privately, holds
    the name; a counter ("-2") would tell how many do. Never a built-in metric's slug nor a page's
    (`/metrics/all/`). Metrics stored before keep their slugs, so their addresses still work."""
    base = slugify(name)[:50].strip("-") or "metric"
    taken = set(registered_slugs()) | RESERVED_SLUGS
    while (slug := f"{base}-{secrets.token_hex(3)}") in taken or Metric.objects.filter(slug=slug).exists():
        pass
    return slug


def _upload(submission: MetricSubmission, checked: list[CheckedFile], digest: str) -> MetricUpload:
    metric = submission.metric
    number = metric.versions.count() + 1
    version = MetricVersion.objects.create(
        metric=metric,
        version=str(number),
        config_hash=digest[:16],
        config={
            "submitted": {
                "upload": number,
                "files": {entry.scores.dataset.slug: entry.staged.digest for entry in checked},
            }
        },
    )
    Metric.objects.filter(pk=metric.pk).update(current_version=version)
    upload = MetricUpload.objects.create(submission=submission, metric_version=version)
    for entry in checked:
        dataset = entry.scores.dataset
        Score.objects.bulk_create(
            [Score(caption_id=pk, metric_version=version, value=value) for pk, value in entry.values.items()],
            batch_size=2000,
        )
        EvaluationJob.objects.create(  # the record that this version's scores of the dataset exist
            purpose=EvaluationJob.Purpose.DATASET,
            dataset=dataset,
            metric_version=version,
            status=EvaluationJob.Status.DONE,
            total=entry.candidates,
            done=len(entry.values),
            finished_at=timezone.now(),
        )
        UploadedFile.objects.create(
            upload=upload,
            dataset=dataset,
            file_name=entry.scores.file_name[:300],
            file_format=entry.file_format,
            file_sha256=entry.staged.digest,
            stored_file=entry.stored,
            scored=len(entry.values),
            candidates=entry.candidates,
        )
    return upload


def upload_quota_check(*, owner: User, lock: bool = False) -> None:
    """QuotaExceeded when the owner has uploaded CAPBENCH_METRIC_UPLOADS_PER_DAY in the last day."""
    if lock:
        get_user_model().objects.select_for_update().filter(pk=owner.pk).first()
    per_day = settings.CAPBENCH_METRIC_UPLOADS_PER_DAY
    since = timezone.now() - timedelta(days=1)
    recent = list(
        MetricUpload.objects.filter(submission__owner=owner, created_at__gt=since)
        .order_by("created_at")
        .values_list("created_at", flat=True)
    )
    if len(recent) >= per_day:
        retry_at = recent[len(recent) - per_day] + timedelta(days=1)
        raise QuotaExceeded(
            f"You have uploaded metric scores {len(recent)} times in the last 24 hours (the limit is {per_day}); "
            f"try again after {retry_at:%Y-%m-%d %H:%M} UTC.",
            retry_at,
        )


def upload_dispatch(*, upload_id: int) -> bool:
    """Hand the upload to the correlation task; on a broker outage the reaper sends it again."""
    if not enqueue(CORRELATE_TASK, [upload_id]):
        return False
    MetricUpload.objects.filter(pk=upload_id).update(dispatched_at=timezone.now())
    return True


def upload_correlate(*, upload_id: int) -> MetricUpload:
    """The upload's correlations with people on each of its datasets, then every dataset's
    significance clusters. Run again, it writes the same rows."""
    upload = MetricUpload.objects.select_related("metric_version__metric").get(pk=upload_id)
    for uploaded in upload.files.select_related("dataset"):
        dataset_correlations(dataset=uploaded.dataset, metric_version=upload.metric_version)
        dataset_significance(dataset=uploaded.dataset)
    MetricUpload.objects.filter(pk=upload.pk).update(
        status=MetricUpload.Status.DONE, error="", finished_at=timezone.now()
    )
    upload.refresh_from_db()
    return upload


def upload_failed(*, upload_id: int, error: str) -> None:
    MetricUpload.objects.filter(pk=upload_id).update(
        status=MetricUpload.Status.FAILED, error=error[:2000], finished_at=timezone.now()
    )


def uploads_dispatch_pending(
    *, older_than: timedelta = timedelta(seconds=30), lost_after: timedelta = timedelta(minutes=15)
) -> int:
    """Send again every upload still waiting for its correlations: never sent (a broker outage), or
    sent long ago (a lost task; a running one is not sent twice within `lost_after`)."""
    now = timezone.now()
    pending = MetricUpload.objects.filter(status=MetricUpload.Status.QUEUED, created_at__lte=now - older_than)
    pending = pending.filter(dispatched_at__isnull=True) | pending.filter(dispatched_at__lte=now - lost_after)
    return sum(upload_dispatch(upload_id=pk) for pk in pending.values_list("pk", flat=True))


def _clusters_again(submission: MetricSubmission) -> None:
    """A metric published, hidden or withdrawn: the public significance clusters, once committed."""
    transaction.on_commit(lambda: significance_dispatch(submission_id=submission.pk))


# Publishing, hiding, withdrawing a metric (catalog.uploads.services), with what a metric adds.
METRICS = UploadKind(MetricSubmission, noun="metric", kept="its files and scores", changed=_clusters_again)


def significance_dispatch(*, submission_id: int) -> None:
    """The clusters again, here and now (a published, hidden or withdrawn metric joins or leaves the
    public clusters at once); sent to a worker if that fails."""
    try:
        metric_significance(submission_id=submission_id)
    except Exception:
        log.exception("metric submission %s: clusters not computed here, sent to a worker", submission_id)
        enqueue(SIGNIFICANCE_TASK, [submission_id])


def metric_significance(*, submission_id: int) -> None:
    """Every dataset the metric has scores on: its clusters again (the public ones with or without it)."""
    for dataset in metric_datasets(MetricSubmission.objects.get(pk=submission_id)):
        dataset_significance(dataset=dataset)


def metric_datasets(submission: MetricSubmission) -> Iterator[Dataset]:
    ids = UploadedFile.objects.filter(upload__submission=submission).values_list("dataset_id", flat=True)
    yield from Dataset.objects.filter(pk__in=ids).order_by("title")
