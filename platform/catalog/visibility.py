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

A dataset may hide its references (`Dataset.references_hidden`: a hidden test set, as the COCO and
nocaps evaluation servers keep theirs). Then only staff read its references, its human judgments
(single ratings, pair preferences, annotators) and the per-caption scores of its reference-based
metrics (they would leak the references' n-grams): `references_visible` for a dataset, `score_q` for
scores. Everyone else sees system-level numbers, intervals, ranks and correlations, and the scores of
reference-free metrics per caption where the caption itself is visible.

Every page, API endpoint, export, download, search, chart and count reads through the QuerySet
methods built on `visible_q` (`Dataset.objects.visible_to`, `System.objects.visible_to`,
`Caption.objects.visible_to`, `Submission.objects.visible_to`, `Score.objects.visible_to`). The rule
is written once, here, as a Q over a path to the submission, so each model applies it through its
own relation (`system__submission__…` for a caption). A submission of either kind (a captioner's, a
metric's) is an `OwnedUpload` (catalog/uploads/models.py): the fields the rule reads (`owner`,
`is_public`, `status`) are that abstract model's, each named once below (`owned_q`, `published_q`,
`withdrawn_q`).

Blind annotation (docs/human-evaluation.md, "Blind annotation"): while a live campaign is open, the
captions of its systems are not read one by one, with their image and their system, by anyone but
staff and the submission's owner (`caption_q`, applied by `Caption.objects.listed_to` and by
`score_q`): a page, download, search or API answer that lists captions leaves them out, so an
annotator cannot look up whose caption they rate, nor which image it belongs to (a gold check shows
a caption of another image). System-level numbers stay shown. Catalog names the campaign fields by
string too and never imports the campaigns app.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q

WITHDRAWN = "withdrawn"  # OwnedUpload.WITHDRAWN: every kind's Status.WITHDRAWN
OPEN_CAMPAIGN = "open"  # campaigns.Campaign.Status.OPEN, named here so catalog stays below campaigns


def is_staff(viewer) -> bool:
    return bool(viewer is not None and viewer.is_authenticated and viewer.is_staff)


def withdrawn_q(*, to_submission: str = "") -> Q:
    """Withdrawn submissions of either kind, over the path `to_submission` ("" on one itself)."""
    return Q(**{f"{to_submission}status": WITHDRAWN})


def published_q(*, to_submission: str = "") -> Q:
    """Submissions of either kind that are public and not withdrawn, over the path `to_submission`."""
    return Q(**{f"{to_submission}is_public": True}) & ~withdrawn_q(to_submission=to_submission)


def owned_q(viewer, *, to_submission: str = "") -> Q:
    """Submissions of either kind that `viewer` (signed in) owns, over the path `to_submission`."""
    return Q(**{f"{to_submission}owner": viewer})


def submitted_q(*, to_system: str = "") -> Q:
    """Systems a submission brought and not withdrawn, over the path `to_system`."""
    return Q(**{f"{to_system}submission__isnull": False}) & ~withdrawn_q(to_submission=f"{to_system}submission__")


def submission_q(viewer, *, to_submission: str = "") -> Q:
    """The submissions of either kind `viewer` may see, over the path `to_submission` ("" on one
    itself): the published ones, the viewer's own, every one for staff."""
    if is_staff(viewer):
        return Q()
    visible = published_q(to_submission=to_submission)
    if viewer is not None and viewer.is_authenticated:
        visible |= owned_q(viewer, to_submission=to_submission)
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


def blinded_q(*, to_system: str = "") -> Q:
    """Systems in a live campaign that is open (its `systems`, reached as `System.campaigns`), over
    the path `to_system`: their captions are blind while it runs (`caption_q`)."""
    return Q(**{f"{to_system}campaigns__status": OPEN_CAMPAIGN})


def caption_q(viewer, *, blinded: Iterable[int], to_system: str = "") -> Q:
    """Captions (or rows reached through `to_system`, the path to their system) that `viewer` may
    read one by one, with their image and system: those of the systems they may see, less the
    blinded ones unless the viewer is staff or the submission's owner (an owner knows their own
    captions; their submission's pages keep showing them). `blinded`: the ids of the systems
    `blinded_q` selects, read once by the caller (`catalog.models.blinded_system_ids`): a list of
    ids leaves a scores page's plan as it is, where a join through the campaigns would move it."""
    if is_staff(viewer):
        return Q()
    shown = visible_q(viewer, to_system=to_system) & ~Q(**{f"{to_system}id__in": list(blinded)})
    if viewer is not None and viewer.is_authenticated:
        shown |= owned_q(viewer, to_submission=f"{to_system}submission__")
    return shown


def references_visible(dataset, viewer) -> bool:
    """Whether `viewer` may read `dataset`'s references, human judgments and per-caption scores of
    reference-based metrics: unless the dataset hides its references, and then staff only."""
    return not dataset.references_hidden or is_staff(viewer)


def references_q(viewer, *, to_dataset: str = "") -> Q:
    """Datasets whose references and judgments `viewer` may read, over the path `to_dataset`."""
    return Q() if is_staff(viewer) else Q(**{f"{to_dataset}references_hidden": False})


def withheld_score_q(*, to_score: str = "") -> Q:
    """Scores no one but staff reads per caption: a reference-based metric's on a dataset whose
    references are hidden (over the path `to_score`, "" on Score itself)."""
    return Q(**{f"{to_score}caption__item__dataset__references_hidden": True}) & Q(
        **{f"{to_score}metric_version__metric__needs__contains": ["references"]}
    )


def score_q(viewer, *, blinded: Iterable[int], to_score: str = "") -> Q:
    """Per-caption scores `viewer` may read: those of captions they may read one by one (`caption_q`:
    blind ones left out), less the withheld ones."""
    if is_staff(viewer):
        return Q()
    shown = caption_q(viewer, blinded=blinded, to_system=f"{to_score}caption__system__")
    return shown & ~withheld_score_q(to_score=to_score)


def metric_q(viewer, *, to_metric: str = "") -> Q:
    """Metrics (or rows reached through `to_metric`) that `viewer` may see: the built-in ones and the
    visible metric submissions' (a `MetricSubmission` is an `OwnedUpload`, as a `Submission` is)."""
    if is_staff(viewer):
        return Q()
    builtin = Q(**{f"{to_metric}submission__isnull": True})
    return builtin | submission_q(viewer, to_submission=f"{to_metric}submission__")
