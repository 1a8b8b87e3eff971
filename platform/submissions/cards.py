"""A submission's results card: per metric its number as the board shows it (the same stored
number and 95% interval, scoring.services.numbers; pages show it in points, ×100 for 0–1 metrics),
its rank among the public systems of the board (ties share a rank), and the gap to the best of them
and to each baseline; the metrics without a number listed apart, in plain words (what went wrong in
detail is for staff)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from django.contrib.auth.models import AnonymousUser
from django.db.models import F

from catalog.models import System
from catalog.visibility import references_visible
from scoring.models import EvaluationJob, Metric
from scoring.selectors import system_values_shown
from scoring.shown import Shown
from scoring.wording import not_computed_here, unavailable_words
from submissions.integrity import Flag, flags_shown
from submissions.models import Submission

PLAIN_WORDS: dict[str, str] = {
    EvaluationJob.Status.QUEUED: "waiting for a worker",
    EvaluationJob.Status.RUNNING: "being scored now",
    EvaluationJob.Status.FAILED: "could not be scored on this submission; the team has the details",
    EvaluationJob.Status.UNAVAILABLE: unavailable_words(),
}


@dataclass(frozen=True)
class Gap:
    name: str  # the other system
    slug: str
    number: Shown  # its number, as the board shows it
    gap: Shown  # ours − theirs (> 0 is better when higher is better)


@dataclass
class CardLine:
    metric: Metric
    number: Shown  # the board's number: value and interval on the metric's scale, shown ×metric.points
    rank: int  # among the public systems with a number and this one (1 = best; ties share)
    tied: bool
    ranked: int  # how many systems the rank is among
    best: Gap | None  # the best other public system
    baselines: list[Gap] = field(default_factory=list)

    @property
    def is_best(self) -> bool:
        return self.rank == 1


@dataclass(frozen=True)
class PendingLine:
    metric: Metric
    status: str
    words: str  # for the submitter
    detail: str  # the job's error (shown to staff only)
    done: int
    total: int


@dataclass
class ResultsCard:
    lines: list[CardLine]
    pending: list[PendingLine]  # queued or running
    missing: list[PendingLine]  # failed or unavailable
    public_systems: int  # public systems on the board besides this one
    compare_with: Gap | None = None  # what the card links a comparison with (compare_target)
    flags: list[Flag] = field(default_factory=list)  # what its integrity checks found (submissions.integrity)

    @property
    def empty(self) -> bool:
        return not (self.lines or self.pending or self.missing)

    @property
    def failed(self) -> list[PendingLine]:
        return [line for line in self.missing if line.status != EvaluationJob.Status.UNAVAILABLE]

    @property
    def unavailable(self) -> list[PendingLine]:
        """The metrics this server does not compute: never queued nor counted as work to do."""
        return [line for line in self.missing if line.status == EvaluationJob.Status.UNAVAILABLE]

    @property
    def not_computed_here(self) -> str:
        """Those metrics in one line, grouped by what is missing (scoring.wording.not_computed_here)."""
        return not_computed_here((line.metric.name, line.metric.needs) for line in self.unavailable)


def compare_target(lines: list[CardLine], headline: str) -> Gap | None:
    """The system a submitter most likely wants to be compared with: on the headline metric's line
    (else the first line that has one) a baseline, else the best other system."""
    ordered = sorted(lines, key=lambda line: line.metric.slug != headline)
    for line in ordered:
        if line.baselines:
            return line.baselines[0]
        if line.best is not None:
            return line.best
    return None


def job_state(job: EvaluationJob, metric: Metric) -> str:
    """The job's status as pages read it: a job still open for a metric this server does not
    compute (planned before planning skipped them) is unavailable, not work to wait for."""
    if job.status in EvaluationJob.OPEN and not metric.available:
        return EvaluationJob.Status.UNAVAILABLE
    return job.status


def results_card(*, submission: Submission, viewer=None) -> ResultsCard:
    """The card as `viewer` may read it (None: anyone; only its integrity flags depend on who)."""
    dataset = submission.dataset
    public = {
        s.pk: s
        for s in System.objects.visible_to(AnonymousUser())
        .ranked()
        .filter(dataset=dataset)
        .exclude(pk=submission.system_id)
    }
    shown = system_values_shown(dataset=dataset)
    metrics = {m.pk: m for m in Metric.objects.filter(is_registered=True)}
    by_slug = {m.slug: m for m in metrics.values()}
    jobs = (
        submission.jobs()
        .filter(metric_version=F("metric_version__metric__current_version"))
        .select_related("metric_version__metric")
    )
    status = {job.metric_version.metric.slug: job for job in jobs}
    lines: list[CardLine] = []
    pending: list[PendingLine] = []
    missing: list[PendingLine] = []
    for slug, metric in sorted(by_slug.items(), key=lambda kv: (kv[1].family, kv[1].name.lower())):
        ours = shown.get((submission.system_id, slug))
        if ours is not None and ours.value is not None and math.isfinite(ours.value):
            lines.append(_line(metric, ours, shown, public))
            continue
        job = status.get(slug)
        if job is None or job.status == EvaluationJob.Status.DONE:
            continue
        state = job_state(job, metric)
        words = (
            unavailable_words(metric.needs)
            if state == EvaluationJob.Status.UNAVAILABLE
            else PLAIN_WORDS.get(state, state)
        )
        line = PendingLine(metric, state, words, job.error, job.done, job.total)
        (pending if state in EvaluationJob.OPEN else missing).append(line)
    flags = flags_shown(submission.flags, references_shown=references_visible(dataset, viewer))
    return ResultsCard(lines, pending, missing, len(public), compare_target(lines, dataset.headline_metric), flags)


def _line(metric: Metric, ours, shown: dict, public: dict[int, System]) -> CardLine:
    scale = metric.points
    others = []
    for system_id, system in public.items():
        theirs = shown.get((system_id, metric.slug))
        if theirs is not None and theirs.value is not None and math.isfinite(theirs.value):
            others.append((system, theirs))
    better = (lambda x, y: x > y) if metric.higher_is_better else (lambda x, y: x < y)
    rank = 1 + sum(1 for _, theirs in others if better(theirs.value, ours.value))
    tied = any(theirs.value == ours.value for _, theirs in others)

    def gap(system: System, theirs) -> Gap:
        number = Shown(theirs.value, theirs.low, theirs.high, scale)
        return Gap(system.name, system.slug, number, Shown(ours.value - theirs.value, scale=scale))

    best = None
    if others:
        top = max(others, key=lambda pair: pair[1].value if metric.higher_is_better else -pair[1].value)
        best = gap(*top)
    return CardLine(
        metric,
        Shown(ours.value, ours.low, ours.high, scale),
        rank,
        tied,
        len(others) + 1,
        best,
        [gap(system, theirs) for system, theirs in sorted(others, key=lambda p: p[0].name) if system.is_baseline],
    )
