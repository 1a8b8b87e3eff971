"""`Client`: the CapBench REST API (/api/v1/) as Python calls.

Answers are the server's JSON as plain dicts (extra keys may appear in later versions; read the keys
you need). Errors raise a `capbench_client.errors.CapBenchError` subclass; retries are
`capbench_client.http.Transport`'s."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from capbench_client.errors import CapBenchError, WaitTimedOut
from capbench_client.http import Transport

JSON = dict[str, Any]
API = "/api/v1"


class Client:
    """A CapBench server at `url` (its root, e.g. https://capbench.example.org), with an API token for
    what needs an account (submitting, your private submissions). `options` go to `Transport`
    (attempts, max_sleep, backoff, timeout, sleep, on_retry)."""

    def __init__(self, url: str, token: str | None = None, **options: Any) -> None:
        self.http = Transport(url, token, **options)

    @property
    def url(self) -> str:
        return self.http.url

    @property
    def token(self) -> str | None:
        return self.http.token

    # Accounts

    def token_login(self, username: str, password: str) -> str:
        """The account's API token (created on first use); this client uses it from now on."""
        answer = self.http.json(
            "POST", f"{API}/auth/token/", data={"username": username, "password": password}, authenticated=False
        )
        token = answer.get("token") if isinstance(answer, dict) else None
        if not isinstance(token, str) or not token:
            raise CapBenchError("the server answered without a token", body=answer)
        self.http.token = token
        return token

    # Submissions

    def submit(
        self,
        dataset: str,
        path: str | Path,
        *,
        method_name: str,
        description: str = "",
        paper_url: str = "",
        code_url: str = "",
        metrics: Iterable[str] | None = None,
        public: bool = False,
    ) -> JSON:
        """Upload a results file (JSON list, JSON Lines or CSV of image_id, caption) for `dataset` (its
        slug); scoring starts on the server. `metrics`: slugs to score (None: every metric).
        The new submission: id, dataset, system (its slug on the board), status, …

        400: `InvalidRequest`, each problem with the file and line; 409: `Conflict` (the same file was
        submitted before: `.submission` is its id); 429: `RateLimited` (a daily quota: `.retry_after`)."""
        return self.http.json(
            "POST",
            f"{API}/submissions/",
            data={
                "dataset": dataset,
                "method_name": method_name,
                "description": description,
                "paper_url": paper_url,
                "code_url": code_url,
                "metrics": list(metrics or []),
                "is_public": _flag(public),
            },
            files={"results": Path(path)},
        )

    def submission(self, submission_id: int) -> JSON:
        """One submission (yours, or a public one)."""
        return self.http.json("GET", f"{API}/submissions/{int(submission_id)}/")

    def progress(self, submission_id: int) -> JSON:
        """Scoring progress: submission, status, error, captions, final (bool), and per metric
        metric, name, status, done, total, failed, error, batches_ahead, seconds."""
        return self.http.json("GET", f"{API}/submissions/{int(submission_id)}/progress/")

    def wait(
        self,
        submission_id: int,
        *,
        poll: float = 2.0,
        timeout: float | None = None,
        on_progress: Callable[[JSON], None] | None = None,
    ) -> JSON:
        """Poll `progress` every `poll` seconds until it is final; the last progress. `on_progress`
        hears each one. Past `timeout` seconds: `WaitTimedOut` (the scoring goes on)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            state = self.progress(submission_id)
            if on_progress is not None:
                on_progress(state)
            if state.get("final"):
                return state
            if deadline is not None and time.monotonic() + poll > deadline:
                raise WaitTimedOut(
                    f"submission {submission_id} is still {state.get('status', 'scoring')} after {timeout:.0f} s",
                    body=state,
                )
            self.http.sleep(poll)

    def results(self, submission_id: int) -> JSON:
        """The results card: submission, status, final, dataset, system, public_systems, and `results`
        (per metric: metric, name, value (raw), points (as the site shows it), low, high (its 95%
        interval in points, or null), rank, ranked (how many systems the rank is among), tied, best,
        baselines), `pending` and `missing` (metric, name, status, words, done, total)."""
        return self.http.json("GET", f"{API}/submissions/{int(submission_id)}/results/")

    # Boards and scores

    def board(
        self, dataset: str, *, sort: str | None = None, order: str | None = None, domain: str | None = None
    ) -> JSON:
        """A dataset's captioner board: dataset, domain, headline_metric, metrics (slug, name, family,
        higher_is_better, points) and systems (rank, system, name, kind, baseline, paper_url, code_url,
        scores: {metric slug: {value (raw), state, low, high}})."""
        return self.http.json("GET", f"{API}/leaderboards/{dataset}/", params=_board_query(sort, order, domain))

    def board_csv(
        self, dataset: str, *, sort: str | None = None, order: str | None = None, domain: str | None = None
    ) -> str:
        """The same board as CSV: one row per system, numbers as the site shows them, with intervals."""
        params = {**_board_query(sort, order, domain), "format": "csv"}
        response = self.http.request("GET", f"{API}/leaderboards/{dataset}/", params=params, accept="text/csv")
        response.encoding = response.encoding or "utf-8"
        return response.text

    def scores(
        self,
        *,
        dataset: str | None = None,
        system: str | None = None,
        metric: str | None = None,
        page_size: int | None = None,
    ) -> Iterator[JSON]:
        """Per-caption scores (id, caption_id, item, system, caption, metric, metric_version, value,
        error, detail), every page followed (the server's cursor; `page_size` rows a page, at most 5000)."""
        query = {"dataset": dataset, "system": system, "metric": metric, "page_size": page_size}
        params: dict[str, str | int] | None = {key: value for key, value in query.items() if value is not None}
        page: str | None = f"{API}/scores/"
        while page:
            answer = self.http.json("GET", page, params=params)
            yield from answer.get("results", [])
            page = answer.get("next")
            params = None  # `next` carries the query and the cursor

    def candidates(self, dataset: str, format: str = "jsonl") -> Iterator[bytes]:
        """A meta-evaluation dataset's candidates to score (caption_id, candidate, references, image,
        item, system), streamed as JSON Lines or CSV bytes."""
        if format not in ("jsonl", "csv"):
            raise ValueError(f"format: jsonl or csv, not {format!r}")
        media = {"jsonl": "application/x-ndjson", "csv": "text/csv"}[format]
        return self.http.lines(f"{API}/datasets/{dataset}/candidates/", params={"format": format}, accept=media)

    def candidate_rows(self, dataset: str) -> Iterator[JSON]:
        """The same candidates, one dict each."""
        return _json_lines(self.candidates(dataset, "jsonl"))

    def references(self, dataset: str) -> Iterator[bytes]:
        """A dataset's items in its order, for scoring locally (item, image, position, references;
        references null on a hidden test set), streamed as JSON Lines bytes."""
        return self.http.lines(f"{API}/datasets/{dataset}/references/", accept="application/x-ndjson")

    def reference_rows(self, dataset: str) -> Iterator[JSON]:
        """The same items, one dict each."""
        return _json_lines(self.references(dataset))

    # Metrics

    def metric(self, slug: str) -> JSON:
        """One metric (slug, name, family, higher_is_better, available, …)."""
        return self.http.json("GET", f"{API}/metrics/{slug}/")

    def upload_metric_scores(
        self,
        name: str,
        scores: Mapping[str, str | Path],
        *,
        description: str = "",
        paper_url: str = "",
        code_url: str = "",
        lower_is_better: bool = False,
        reference_free: bool = False,
        public: bool = False,
    ) -> JSON:
        """Upload a metric's scores, one file per dataset ({dataset slug: JSONL or CSV file of caption_id,
        score}); the server correlates them with people. The metric submission (201); the same name
        again makes a new version. 400: `InvalidRequest`, each problem with its file and line."""
        if not scores:
            raise ValueError("scores: at least one dataset's file")
        return self.http.json(
            "POST",
            f"{API}/metric-submissions/",
            data={
                "name": name,
                "description": description,
                "paper_url": paper_url,
                "code_url": code_url,
                "lower_is_better": _flag(lower_is_better),
                "reference_free": _flag(reference_free),
                "is_public": _flag(public),
            },
            files={f"scores_{dataset}": Path(path) for dataset, path in scores.items()},
        )

    # Listings

    def datasets(self) -> list[JSON]:
        """Every dataset this account may see (slug, title, modality, kind, …)."""
        return list(self._listing(f"{API}/datasets/"))

    def metrics(self) -> list[JSON]:
        """Every metric this account may see (slug, name, family, higher_is_better, available, …)."""
        return list(self._listing(f"{API}/metrics/"))

    def _listing(self, path: str) -> Iterator[JSON]:
        page: str | None = path
        while page:
            answer = self.http.json("GET", page)
            if isinstance(answer, list):  # an unpaginated listing
                yield from answer
                return
            yield from answer.get("results", [])
            page = answer.get("next")


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _board_query(sort: str | None, order: str | None, domain: str | None) -> dict[str, str | int]:
    return {key: value for key, value in (("sort", sort), ("order", order), ("domain", domain)) if value}


def _json_lines(chunks: Iterable[bytes]) -> Iterator[JSON]:
    """A streamed JSON Lines download's objects, one a line."""
    rest = b""
    for chunk in chunks:
        *lines, rest = (rest + chunk).split(b"\n")
        yield from (json.loads(line) for line in lines if line.strip())
    if rest.strip():
        yield json.loads(rest)
