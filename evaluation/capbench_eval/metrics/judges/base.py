"""What every language-model judge shares: requests built per row, answered by a backend through
the reply cache, parsed into a number; a reply without a number is drawn again (up to `draws`
times) and then recorded as a failure with the reply kept, never as a 0. The score detail keeps
the reasoning text, what the number was computed from and the tokens used."""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from capbench_eval.metrics.base import CaptionRow, Metric, MetricResult, MetricUnavailable
from capbench_eval.metrics.judges.backends import (
    Backend,
    JudgeFailed,
    JudgeParams,
    JudgeReply,
    JudgeRequest,
    LocalVLM,
    OpenAICompatible,
    ReplyCache,
)
from capbench_eval.metrics.judges.estimate import Estimate, price_of
from capbench_eval.metrics.judges.parsing import Unparseable
from capbench_eval.metrics.judges.prompts import prompt_sha

MIME = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".webp": "image/webp", ".gif": "image/gif"}


def image_bytes(path: str) -> tuple[bytes, str]:
    return Path(path).read_bytes(), MIME.get(Path(path).suffix.lower(), "image/jpeg")


class RowProblem(ValueError):
    """This row cannot be judged (no image, no references …); recorded for the row alone."""


class JudgeMetric(Metric):
    family = "judge"
    extra = "judges"
    params = JudgeParams()
    prompts: tuple[str, ...] = ()
    draws = 3  # replies drawn before a row without a number is recorded as failed
    # The reply length an estimate assumes before any reply of this metric has been seen (tokens).
    assumed_completion_tokens = 150

    @abstractmethod
    def backend(self) -> Backend:
        """The backend this metric is configured to use."""

    @abstractmethod
    def request(self, row: CaptionRow, draw: int) -> JudgeRequest:
        """The prompt (and picture) for one row; raises RowProblem when the row cannot be judged."""

    @abstractmethod
    def parse(self, row: CaptionRow, reply: JudgeReply) -> tuple[float, dict]:
        """The row's number and what it was read from; raises Unparseable."""

    def config(self) -> dict:
        return {
            "backend": self.backend().identity(),
            "params": asdict(self.params),
            "draws": self.draws,
            "prompts": {name: prompt_sha(name) for name in self.prompts},
        }

    def unavailable_reason(self) -> str | None:
        return self.backend().unavailable_reason()

    def prepare(self, rows: Sequence[CaptionRow], backend: Backend, cache: ReplyCache) -> None:
        """Work shared by rows before they are judged (VisCE²'s visual context per image)."""

    def shared_detail(self, row: CaptionRow) -> dict:
        """What the shared work gave this row, kept in its detail whether or not it gets a number."""
        return {}

    def planned(
        self, rows: Sequence[CaptionRow], backend: Backend, cache: ReplyCache, completion: float
    ) -> tuple[list[tuple[JudgeRequest, float]], int]:
        """The first-draw requests a run would send, each with its expected completion tokens, and
        how many rows cannot be judged. Shared work (VisCE²'s contexts) comes first."""
        planned, unjudgeable = [], 0
        for row in rows:
            try:
                planned.append((self.request(row, 0), completion))
            except (RowProblem, OSError):
                unjudgeable += 1
        return planned, unjudgeable

    def estimate(
        self,
        rows: Sequence[CaptionRow],
        *,
        observed_completion: tuple[float, int] | None = None,
        cache: ReplyCache | None = None,
    ) -> Estimate:
        """Tokens and cost of scoring `rows`, sending nothing. `observed_completion` is the mean
        completion tokens of this metric's earlier replies and how many there were."""
        backend = self.backend()
        reason = backend.unavailable_reason()
        if reason and not isinstance(backend, OpenAICompatible):  # an endpoint's cost is known before it is set up
            raise MetricUnavailable(reason)
        cache = cache or ReplyCache()
        if observed_completion and observed_completion[1]:
            completion, seen = observed_completion
            basis = f"observed: mean {completion:.0f} per reply over {seen:,} earlier scored captions"
        else:
            completion = self.assumed_completion_tokens
            basis = f"assumed: {completion} per reply, no earlier replies of this metric"
        planned, unjudgeable = self.planned(rows, backend, cache, completion)
        todo = [
            (request, expected) for request, expected in planned if not backend.is_cached(request, self.params, cache)
        ]
        prompt = sum(backend.prompt_tokens(request) for request, _ in todo)
        expected = round(sum(e for _, e in todo))
        bound = self.params.max_tokens * len(todo) if self.params.max_tokens else None
        price = price_of(getattr(backend, "model", None))
        return Estimate(
            metric=self.slug,
            backend=backend.identity(),
            counting=backend.counting,
            rows=len(rows),
            unjudgeable=unjudgeable,
            requests=len(planned),
            cached=len(planned) - len(todo),
            images=sum(request.image is not None for request, _ in todo),
            prompt_tokens=prompt,
            completion_tokens=expected,
            completion_basis=basis,
            completion_tokens_max=bound,
            price_basis=price.basis
            if price
            else (
                "a local model: no per-token price"
                if isinstance(backend, LocalVLM)
                else "unknown: set CAPBENCH_JUDGE_PRICE_INPUT and _OUTPUT (USD per million tokens)"
            ),
            cost_usd=price.cost(prompt, expected) if price else None,
            cost_usd_max=price.cost(prompt, bound) if price and bound is not None else None,
        )

    def score(self, rows: Sequence[CaptionRow], context: object | None = None) -> MetricResult:
        backend = self.backend()
        reason = backend.unavailable_reason()
        if reason:
            raise MetricUnavailable(reason)
        cache = ReplyCache()
        self.prepare(rows, backend, cache)
        scores = [math.nan] * len(rows)
        details: list[dict] = [{"draws": 0, "prompt_tokens": 0, "completion_tokens": 0} for _ in rows]
        pending = list(range(len(rows)))
        # Greedy decoding on a local model gives the same reply every time: one draw is all there is.
        draws = 1 if self.params.temperature == 0 and isinstance(backend, LocalVLM) else self.draws
        for draw in range(draws):
            requests = {}
            for index in pending:
                try:
                    requests[index] = self.request(rows[index], draw)
                except (RowProblem, OSError) as error:
                    details[index]["error"] = str(error)
                    continue
                if draw == 0:
                    details[index].update(self.shared_detail(rows[index]))
            order = list(requests)
            replies = backend.complete([requests[i] for i in order], self.params, cache)
            still = []
            for index, reply in zip(order, replies, strict=True):
                detail = details[index]
                detail["draws"] += 1
                if isinstance(reply, JudgeFailed):
                    detail["error"] = str(reply)
                    continue
                detail["prompt_tokens"] += reply.prompt_tokens
                detail["completion_tokens"] += reply.completion_tokens
                detail["reply"] = reply.text
                detail["model"] = reply.model
                try:
                    value, read = self.parse(rows[index], reply)
                except Unparseable as error:
                    detail["error"] = f"unparseable reply: {error}"
                    still.append(index)
                    continue
                detail.pop("error", None)
                detail.update(read)
                scores[index] = value
            pending = still
            if not pending:
                break
        kept = [value for value in scores if not math.isnan(value)]
        return MetricResult(scores=scores, corpus=sum(kept) / len(kept) if kept else None, details=details)
