"""Signals scoring sends. The layers above (submissions, leaderboards) connect to them: scoring
never imports them. Each is a notice: its receivers return nothing scoring reads, and none depends
on another having run first."""

from django.dispatch import Signal

# Sent right after a batch claim moves a job from queued to running, with `system_id` (None for a
# dataset's job) and `started_at`; submissions mark the system's submission running. Scoring knows
# only systems: the submission that brought one is the layer above's to find.
job_running = Signal()

# Sent (after commit) when a job reaches a final state, with `dataset_id` and `system_id` (or
# None); submissions settle the status of the system's submission and leaderboards rebuild the
# dataset's board. The two run in either order: the board reads none of what settling writes
# (tests/platform/scoring/test_events.py).
job_ended = Signal()

# Sent (after commit) with `dataset_id` when the sweep computed a dataset's system numbers again
# (scoring.services.numbers, after a change of how a number is formed): leaderboards rebuild its board.
numbers_changed = Signal()
