"""`manage.py scoring metrics|estimate|score-dataset|jobs`: the scoring engine from the command line (the
periodic sweep, once: `manage.py sweep`)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from capbench_eval.metrics import UnknownMetric
from catalog.models import Dataset
from scoring.models import EvaluationJob, Metric
from scoring.services.estimates import NotEstimated, dataset_estimate
from scoring.services.metrics import metrics_sync
from scoring.services.planning import dataset_plan, versions_rescore


class Command(BaseCommand):
    help = "Sync metrics from the registry, plan dataset scoring, list jobs."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        metrics = actions.add_parser("metrics", help="sync the registry and list metrics with their availability")
        metrics.add_argument(
            "--summary",
            action="store_true",
            help="how many, and which cannot run here, in one line (and a line if new versions are to be re-scored)",
        )
        estimate = actions.add_parser(
            "estimate", help="tokens and cost of scoring a dataset with the judges; sends nothing"
        )
        estimate.add_argument("dataset")
        estimate.add_argument("--metric", action="append", dest="metrics", help="slug (repeat); default every judge")
        estimate.add_argument("--json", action="store_true", help="one JSON object per metric")
        score = actions.add_parser("score-dataset", help="score every candidate caption of a dataset")
        score.add_argument("dataset")
        score.add_argument("--metric", action="append", dest="metrics", help="slug (repeat); default every metric")
        jobs = actions.add_parser("jobs", help="the latest jobs and their progress")
        jobs.add_argument("--limit", type=int, default=30)

    def handle(self, *args, **options) -> None:
        getattr(self, "_" + options["action"].replace("-", "_"))(options)

    def _metrics(self, options) -> None:
        created = metrics_sync()
        registered = Metric.objects.filter(is_registered=True).select_related("current_version").order_by("slug")
        if options["summary"]:
            self.stdout.write(_summary(list(registered)))
        else:
            for metric in registered:
                state = "available" if metric.available else f"unavailable: {metric.unavailable_reason}"
                version = metric.current_version
                # metrics_sync gave every registered metric a version
                described = f"v{version.version:6} {version.config_hash}" if version else "(no version)"
                self.stdout.write(f"{metric.slug:12} {metric.queue:4} {described}  {state}")
            if created:
                self.stdout.write(f"new versions: {', '.join(str(v) for v in created)}")
        rescoring = versions_rescore()
        if rescoring:
            self.stdout.write(f"re-scoring under the new versions: {len(rescoring)} job(s) planned")

    def _estimate(self, options) -> None:
        try:
            estimates = dataset_estimate(dataset=self._dataset(options), slugs=options["metrics"])
        except (UnknownMetric, ValueError) as error:
            raise CommandError(error.args[0]) from None
        for found in estimates:
            if options["json"]:
                body = found.to_json() if not isinstance(found, NotEstimated) else found.__dict__
                self.stdout.write(json.dumps(body))
            elif isinstance(found, NotEstimated):
                self.stdout.write(f"{found.metric}: {found.reason}")
            else:
                self.stdout.write(estimate_text(found))

    def _dataset(self, options) -> Dataset:
        dataset = Dataset.objects.filter(slug=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset {options['dataset']!r}")
        return dataset

    def _score_dataset(self, options) -> None:
        dataset = self._dataset(options)
        try:
            jobs = dataset_plan(dataset=dataset, slugs=options["metrics"])
        except UnknownMetric as error:
            raise CommandError(error.args[0]) from None
        for job in jobs:
            self.stdout.write(
                f"job {job.pk}: {job.metric_version.metric.slug} over {job.total:,} captions, "
                f"{job.batch_count} batch(es), {job.status}"
            )

    def _jobs(self, options) -> None:
        for job in EvaluationJob.objects.select_related("metric_version__metric", "dataset", "system")[
            : options["limit"]
        ]:
            target = job.system.name if job.system else f"all of {job.dataset.slug}"
            line = f"{job.pk:6} {job.metric_version.metric.slug:12} {job.status:11} {job.done:>7,}/{job.total:<7,} {target}"
            self.stdout.write(line + (f"  {job.error}" if job.error else ""))


def estimate_text(found) -> str:
    cost = (
        f"${found.cost_usd:,.2f}" + (f" (at most ${found.cost_usd_max:,.2f})" if found.cost_usd_max is not None else "")
        if found.cost_usd is not None
        else "no price"
    )
    bound = f", at most {found.completion_tokens_max:,}" if found.completion_tokens_max is not None else ""
    return "\n".join(
        [
            f"{found.metric} on {found.backend}",
            f"  rows {found.rows:,} ({found.unjudgeable:,} cannot be judged); requests {found.requests:,}, "
            f"{found.cached:,} already cached; {found.images:,} pictures to send",
            f"  prompt tokens {found.prompt_tokens:,} ({found.counting})",
            f"  completion tokens {found.completion_tokens:,}{bound} ({found.completion_basis})",
            f"  cost {cost} ({found.price_basis}); redraws after unparseable replies not counted",
        ]
    )


def _summary(registered: list[Metric]) -> str:
    """One line: how many metrics, how many can run on this machine, and which cannot."""
    unavailable = sorted(metric.slug for metric in registered if not metric.available)
    line = f"metrics: {len(registered)} registered, {len(registered) - len(unavailable)} can run here"
    if unavailable:
        line += f" (not: {', '.join(unavailable)}; `python manage.py scoring metrics` says why)"
    return line
