"""The one visibility rule: what a viewer may see of the benchmark's captions and submissions.

A viewer sees
- a dataset when it is public;
- a dataset's own systems and captions (those no submission brought);
- a submission, its system, captions and scores when the submission is public and not withdrawn,
  or when the viewer owns it, or is staff.

A viewer sees a metric when it is built in (no metric submission brought it), or when its metric
submission is public and not withdrawn, or the viewer's own, or the viewer is staff (`metric_q`,
applied by `Metric.objects.visible_to`): a submitted metric's name, scores and correlations are
read through it.

Every page, API endpoint, export, download, search, chart and count reads through the QuerySet
methods built on `visible_q` (`Dataset.objects.visible_to`, `System.objects.visible_to`,
`Caption.objects.visible_to`, `Submission.objects.visible_to`, `Score.objects.visible_to`). The rule
is written once, here, as a Q over a path to the submission, so each model applies it through its
own relation (`system__submission__…` for a caption). Catalog names the submission fields by string
and never imports the submissions app.
"""

from __future__ import annotations

from django.db.models import Q

WITHDRAWN = "withdrawn"  # Submission.Status.WITHDRAWN, named here so catalog stays below submissions


def is_staff(viewer) -> bool:
    return bool(viewer is not None and viewer.is_authenticated and viewer.is_staff)


def withdrawn_q(*, to_submission: str = "") -> Q:
    """Withdrawn submissions, over the path `to_submission` ("" on Submission itself)."""
    return Q(**{f"{to_submission}status": WITHDRAWN})


def submitted_q(*, to_system: str = "") -> Q:
    """Systems a submission brought and not withdrawn, over the path `to_system`."""
    return Q(**{f"{to_system}submission__isnull": False}) & ~withdrawn_q(to_submission=f"{to_system}submission__")


def submission_q(viewer, *, to_submission: str = "") -> Q:
    """The submissions `viewer` may see, over the path `to_submission` ("" on Submission itself)."""
    if is_staff(viewer):
        return Q()
    visible = Q(**{f"{to_submission}is_public": True}) & ~withdrawn_q(to_submission=to_submission)
    if viewer is not None and viewer.is_authenticated:
        visible |= Q(**{f"{to_submission}owner": viewer})
    return visible


def own_q(*, to_system: str = "") -> Q:
    """The dataset's own systems (no submission brought them), over the path `to_system`."""
    return Q(**{f"{to_system}submission__isnull": True})


def visible_q(viewer, *, to_system: str = "") -> Q:
    """Systems (or rows reached through `to_system`) that `viewer` may see: the dataset's own and
    the visible submissions'."""
    if is_staff(viewer):
        return Q()
    return own_q(to_system=to_system) | submission_q(viewer, to_submission=f"{to_system}submission__")


def metric_q(viewer, *, to_metric: str = "") -> Q:
    """Metrics (or rows reached through `to_metric`) that `viewer` may see: the built-in ones and the
    visible metric submissions' (a submitted metric's `submission` has the fields a submission has)."""
    if is_staff(viewer):
        return Q()
    builtin = Q(**{f"{to_metric}submission__isnull": True})
    return builtin | submission_q(viewer, to_submission=f"{to_metric}submission__")
