"""Signals scoring sends. The layers above (submissions, leaderboards) connect to them: scoring
never imports them."""

from django.dispatch import Signal

# Sent right after a batch claim moves a job from queued to running, with `system_id` (None for a
# dataset's job) and `started_at`; submissions mark the system's submission running. Scoring knows
# only systems: the submission that brought one is the layer above's to find.
job_running = Signal()

# Sent (after commit) when a job reaches a final state, with `dataset_id` and `system_id` (or
# None); submissions settle the status of the system's submission, then leaderboards rebuild the
# dataset's board (receivers run in INSTALLED_APPS order: submissions before leaderboards).
job_ended = Signal()

# Sent by the reaper's sweep after re-sending undelivered batches and before re-scoring, with
# `counts` (the sweep's tally) and `each(items, action, key)`: the sweep's loop that logs one
# item's error, skips that item and counts it. Submissions settle theirs under the key "settled".
jobs_swept = Signal()

# Sent by planning.versions_rescore before it plans: each receiver returns the ids of systems whose
# caption sets must not be re-scored under a new metric version (submissions: the withdrawn ones).
rescore_excluded = Signal()

# Sent (after commit) with `dataset_id` when the sweep computed a dataset's system numbers again
# (scoring.services.numbers, after a change of how a number is formed): leaderboards rebuild its board.
numbers_changed = Signal()
