"""No user input gives a server error: the API fuzzed from its OpenAPI schema (schemathesis), every
HTML route fuzzed with hostile values for every parameter name a view reads (found by scanning the
code, so a new parameter is covered without editing this file); CSV downloads that a spreadsheet
cannot turn into formulas; a server error logged once."""

from __future__ import annotations

import csv
import inspect
import io
import json
import logging
import re
import time
from pathlib import Path

import pytest
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, resolve

from tests.platform.factories import UserFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.usefixtures("fresh_page_memory")]

ROOT = Path(__file__).resolve().parents[3]

# Whatever the code reads is added to these (see `parameter_names`).
FIXED_NAMES = (
    "q",
    "page",
    "sort",
    "order",
    "metric",
    "dataset",
    "system",
    "level",
    "protocol",
    "dimension",
    "statistic",
    "download",
    "next",
    "family",
    "reference",
    "cursor",
    "limit",
    "offset",
    "page_size",
)
HOSTILE = (
    "\x00",
    "a\x00b",
    "99999999999999999999",
    "-1",
    "0",
    "1e309",
    "' OR 1=1 --",
    "%",
    "../../etc/passwd",
    "<script>",
    "日本語",
    "x" * 5000,
    "",
    "nan",
    "[]",
    # values a view acts on: a download format, a flag, a digit no int() takes
    "csv",
    "1",
    "²",
)
# GET/POST/query_params/data/query followed by .get( .getlist( .pop( or [ and a quoted name.
READS = re.compile(
    r"""\b(?:GET|POST|query_params|data|query)\s*(?:\.(?:get|getlist|pop))?\s*[(\[]\s*["']([A-Za-z_][\w-]*)["']"""
)
# {{ request.GET.sort }} in a template (not a QueryDict method).
TEMPLATE_READS = re.compile(
    r"request\.(?:GET|POST)\.(?!(?:get|getlist|lists|items|keys|values|urlencode|dict|copy)\b)"
    r"([A-Za-z_]\w*)"
)
CONVERTER = re.compile(r"<(?:(\w+):)?(\w+)>")
THROTTLES_OFF = {
    "CAPBENCH_API_ANON_RATE": "1000000/min",
    "CAPBENCH_API_USER_RATE": "1000000/min",
    "CAPBENCH_API_SUBMISSION_RATE": "1000000/min",
}


def names_read(source: str, template: bool = False) -> set[str]:
    return set(READS.findall(source)) | (set(TEMPLATE_READS.findall(source)) if template else set())


def parameter_names(*folders: str) -> list[str]:
    """Every request parameter name the code or templates under `folders` read, and FIXED_NAMES."""
    found = set(FIXED_NAMES)
    for folder in folders:
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".html", ".txt") and not {"migrations", "settings"} & set(path.parts):
                found |= names_read(path.read_text(encoding="utf-8", errors="replace"), path.suffix != ".py")
    return sorted(found)


@pytest.fixture(autouse=True)
def _no_limits(monkeypatch, settings):
    """Fuzzing is thousands of requests a minute: rate limits (plumbing.limits, DRF's throttles,
    whichever the settings name) stay out of the way."""

    settings.CAPBENCH_RATE_LIMITS_ENABLED = False  # thousands of requests from one address
    settings.CAPBENCH_SUBMISSIONS_PER_DAY = 1000
    yield


# ---------------------------------------------------------------------------------------------
# 1a. The API, from its OpenAPI schema


def api_schema(extra_names: list[str]):
    """The API's own schema, each GET operation also taking every parameter name the API code
    reads (as optional strings) when the schema does not declare it: filters read straight from
    `query_params` are fuzzed too."""
    import schemathesis
    from django.core.wsgi import get_wsgi_application

    raw = json.loads(Client().get("/api/v1/schema/", {"format": "json"}).content)
    for operations in raw["paths"].values():
        for method, operation in operations.items():
            if method != "get":
                continue
            declared = {p["name"] for p in operation.get("parameters", []) if p.get("in") == "query"}
            operation.setdefault("parameters", []).extend(
                {"name": name, "in": "query", "required": False, "schema": {"type": "string"}}
                for name in extra_names
                if name not in declared
            )
    schema = schemathesis.openapi.from_dict(raw)
    schema.app = get_wsgi_application()
    return schema


def test_the_api_never_answers_a_server_error(world, django_user_model):
    """Every operation, positive and negative cases, as anonymous, a member and staff (whose
    POST /datasets/ parses uploads); path ids fixed to real rows and generated."""
    from hypothesis import HealthCheck, Phase, given, settings
    from rest_framework.authtoken.models import Token
    from schemathesis import GenerationMode

    schema = api_schema(parameter_names("platform/api"))
    staff = UserFactory(username="curator", is_staff=True)
    users = {
        "anonymous": {},
        "member": {"Authorization": f"Token {Token.objects.create(user=world['user']).key}"},
        "staff": {"Authorization": f"Token {Token.objects.create(user=staff).key}"},
    }
    real_paths = {
        "slug": [world["dataset"].slug, world["metric"].slug],
        "id": [world["public"].pk, world["public"].system_id, world["withdrawn"].pk],
    }
    failures, requests, started = [], 0, time.monotonic()

    def exercise(operation, mode, headers, path_parameters, examples):
        @given(case=operation.as_strategy(generation_mode=mode, path_parameters=path_parameters))
        @settings(
            max_examples=examples,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def run(case):
            nonlocal requests
            requests += 1
            # REMOTE_ADDR as every WSGI server sets it (werkzeug's test client does not).
            response = case.call(headers=headers, environ_base={"REMOTE_ADDR": "127.0.0.1"})
            if response.status_code >= 500:
                failures.append(
                    f"{response.status_code} {case.method} {case.formatted_path} query={case.query!r} "
                    f"body={str(case.body)[:200]!r} as {who}"
                )

        run()

    for result in schema.get_all_operations():
        operation = result.ok()
        names = [p.name for p in operation.path_parameters]
        reading = operation.method.upper() == "GET"
        for who, headers in users.items():
            if reading and who == "staff":
                continue  # staff read what members read
            # Generated ids and slugs, valid and invalid input (invalid reads once: anonymous).
            exercise(operation, GenerationMode.POSITIVE, headers, None, 6)
            if not reading or who == "anonymous":
                exercise(operation, GenerationMode.NEGATIVE, headers, None, 6)
            # Real rows: the rest of the request generated.
            for name in names[:1]:
                for value in real_paths.get(name, []):
                    exercise(operation, GenerationMode.POSITIVE, headers, {name: value}, 3)
    elapsed = time.monotonic() - started
    print(f"schemathesis: {requests} requests in {elapsed:.1f} s")
    assert not failures, "\n".join(failures)


INVALID_CURSOR = "invalid cursor"


AUDITED = [  # (path, query, the answer expected)
    ("/api/v1/scores/", {"metric": "\x00"}, 400),
    ("/api/v1/scores/", {"dataset": "a\x00b"}, 400),
    ("/api/v1/scores/", {"system": "\x00"}, 400),
    ("/api/v1/correlations/", {"level": "\x00"}, 400),
    ("/api/v1/correlations/", {"protocol": "\x00"}, 400),
    ("/api/v1/leaderboards/metrics/", {"level": "\x00"}, 400),
    ("/api/v1/leaderboards/metrics/", {"protocol": "\x00"}, 400),
    ("/datasets/demo/items/", {"q": "\x00"}, 400),
    ("/datasets/demo/significance/", {"protocol": "\x00"}, 400),
    ("/submissions/1/", {"metric": "\x00"}, 400),
    ("/api/v1/scores/", {"cursor": "not base64!"}, INVALID_CURSOR),
    ("/api/v1/scores/", {"cursor": "cD1hYmM="}, INVALID_CURSOR),  # p=abc
    ("/api/v1/scores/", {"cursor": "cD05OTk5OTk5OTk5OTk5OTk5OTk5OTk5"}, INVALID_CURSOR),  # p=9999999999999999999999
    ("/api/v1/scores/", {"cursor": "cD0tMQ=="}, INVALID_CURSOR),  # p=-1
    ("/api/v1/scores/", {"cursor": "cD3Csg=="}, INVALID_CURSOR),  # p=² (a digit to str.isdigit)
    ("/api/v1/scores/", {"cursor": "bz05OTk5OTk5OTk5OTk5OTk5OTk5OTk5JnA9MQ=="}, 200),  # o=huge&p=1: capped
    ("/api/v1/scores/", {"cursor": "cj0yJnA9MQ=="}, 200),  # r=2&p=1
    ("/api/v1/scores/", {"page_size": "99999999999999999999"}, 200),
    ("/api/v1/scores/", {"page_size": "-5"}, 200),
    ("/api/v1/datasets/", {"limit": "99999999999999999999"}, 200),
    ("/api/v1/datasets/", {"offset": "9" * 5000}, 400),
    ("/api/v1/datasets/", {"offset": "²"}, 400),
    ("/api/v1/datasets/", {"limit": "-1", "offset": "-1"}, 400),
]


def test_what_the_auditor_sent_is_refused_or_served(world):
    client, wrong = Client(raise_request_exception=False), []
    for path, query, expected in AUDITED:
        response = client.get(path, query)
        if expected == INVALID_CURSOR:
            if response.status_code != 404 or response.json()["detail"].lower() != INVALID_CURSOR:
                wrong.append((path, query, response.status_code, response.content[:200]))
        elif response.status_code != expected:
            wrong.append((path, query, response.status_code, response.content[:200]))
    assert not wrong, wrong


def test_a_staff_upload_with_hostile_names_or_a_nul_is_refused(demo_dataset, client, django_user_model):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from rest_framework.authtoken.models import Token

    from catalog.models import Dataset

    staff = Client(
        raise_request_exception=False,
        HTTP_AUTHORIZATION="Token " + Token.objects.create(user=UserFactory(username="curator", is_staff=True)).key,
    )
    lines = client.get("/datasets/demo/download.jsonl").content.decode().splitlines()

    def upload(content: str, **names) -> tuple[int, dict]:
        response = staff.post("/api/v1/datasets/", {"file": SimpleUploadedFile("d.jsonl", content.encode()), **names})
        return response.status_code, response.json()

    for names, field in (
        ({"slug": "a\x00b"}, "slug"),
        ({"slug": "x" * 101}, "slug"),
        ({"slug": "Bad slug!"}, "slug"),
        ({"title": "t\x00"}, "title"),
        ({"title": "t" * 201}, "title"),
    ):
        status, body = upload("\n".join(lines), **names)
        assert status == 400 and field in body, (names, status, body)
    caption = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "caption")
    row = json.loads(lines[caption])
    poisoned = [*lines[:caption], json.dumps({**row, "text": row["text"] + "\x00"}), *lines[caption + 1 :]]
    status, body = upload("\n".join(poisoned), slug="poisoned")
    assert status == 400
    assert (
        body["file"] == f"d.jsonl, line {caption + 1}: contains a NUL character (U+0000), which no stored text may hold"
    )
    assert list(Dataset.objects.values_list("slug", flat=True)) == ["demo"]


def test_a_good_cursor_still_pages(world):
    client = Client()
    first = client.get("/api/v1/scores/", {"page_size": 30}).json()
    assert len(first["results"]) == 30 and first["next"]
    second = client.get(first["next"]).json()
    assert second["results"][0]["id"] > first["results"][-1]["id"]
    back = client.get(second["previous"]).json()
    assert [r["id"] for r in back["results"]] == [r["id"] for r in first["results"]]


# ---------------------------------------------------------------------------------------------
# 1b. Every HTML route, every parameter name, hostile values


def routes(patterns=None, prefix: str = ""):
    """(route text, pattern) for every URL pattern of the project, nested includes walked."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        text = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from routes(pattern.url_patterns, text)
        else:
            assert isinstance(pattern, URLPattern)
            yield text, pattern


def html_routes() -> list[str]:
    """The routes to fuzz: everything but the API (fuzzed from its schema) and the admin's own
    pages (its login and index stay)."""
    chosen = []
    for text, _ in routes():
        if text.startswith("api/"):
            continue
        if text.startswith("admin/"):
            if text in ("admin/", "admin/login/"):
                chosen.append(text)
            continue
        assert "(?P<" not in text and "^" not in text, f"a regular-expression route the fuzz cannot fill: {text}"
        chosen.append(text)
    return chosen


def fillings(route: str, real: dict[str, list[str]], junk: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """The route's URLs with real values for its parameters, and with junk ones."""

    def fill(values: dict[str, list[str]]) -> list[str]:
        urls = ["/" + route]
        for match in CONVERTER.finditer(route):
            kind = match.group(1) or "str"
            urls = [url.replace(match.group(0), str(value), 1) for url in urls for value in values[kind]]
        return urls

    return fill(real), fill(junk)


def view_reads(url: str) -> tuple[list[str], bool]:
    """The parameter names the view function itself reads, and whether it handles POST."""
    view = resolve(url).func
    view = getattr(view, "view_class", None) or inspect.unwrap(view)
    try:
        source = inspect.getsource(view)
    except (OSError, TypeError):
        return [], True
    return sorted(names_read(source)), "POST" in source or "post" in source


def test_no_page_answers_a_server_error_to_hostile_parameters(world):
    """Each HTML route with real ids and junk ones; where a real one answers, every parameter name
    with every hostile value (GET and POST, all names at once in rotation), then each name the view
    itself reads alone, the others holding real values. Anonymous, then the owner of the submissions
    (whose POSTs may withdraw, hide or log out: that is why the member comes second)."""
    names = parameter_names("platform", "templates")
    real = {
        "slug": [world["dataset"].slug, world["metric"].slug],
        "int": [world["public"].pk, world["withdrawn"].pk, world["private"].pk, world["item"].pk]
        + ([world["media"].pk] if world["media"] else []),
        "str": ["a" * 64],
    }
    junk = {
        "slug": ["nope", "a" * 300],
        "int": ["0", "99999999999999999999"],
        "str": ["..", "x" * 300],
        "path": ["../../etc/passwd"],
        "uuid": ["00000000-0000-0000-0000-000000000000"],
    }
    # Real values for the names that select something, so that one hostile parameter at a time gets
    # past the others' checks (the significance page needs all four to find its row).
    baseline = {
        "protocol": world["significance"].protocol,
        "dimension": "expert",
        "statistic": "tau_c",
        "level": "caption",
        "metric": world["metric"].slug,
        "dataset": world["dataset"].slug,
        "sort": world["metric"].slug,
    }
    failures, count, started, live = [], 0, time.monotonic(), []

    def send(client, method, url, data, who):
        nonlocal count
        count += 1
        response = getattr(client, method)(url, data)
        if response.status_code >= 500:
            error = response.exc_info[1] if getattr(response, "exc_info", None) else None
            shown = {k: (v[:20] + "…" if len(v) > 20 else v) for k, v in data.items() if k in data}
            failures.append(f"{response.status_code} {method.upper()} {url} {shown!r} as {who}: {error!r}")
        return response

    def signed_in(client, user):
        if user is not None and "_auth_user_id" not in client.session:
            client.force_login(user)  # a POST to logout/ earlier must not change who asks
        return client

    all_routes = html_routes()
    for who, user in (("anonymous", None), ("member", world["user"])):
        client = Client(raise_request_exception=False)
        for route in all_routes:
            good, bad = fillings(route, real, junk)
            for url in bad:
                send(signed_in(client, user), "get", url, {}, who)
            reached = 0
            for url in good:
                # 200 (or 405 from a POST-only view) means the view ran; 404 is an id of another kind
                # of row, 302 a sign-in the decorator asks for: one request is enough for those.
                if reached == 2 or send(signed_in(client, user), "get", url, baseline, who).status_code not in (
                    200,
                    405,
                ):
                    continue
                reached += 1
                live.append(f"{who} {url}")
                own, posts = view_reads(url)
                for k in range(len(HOSTILE)):
                    rotated = {name: HOSTILE[(k + i) % len(HOSTILE)] for i, name in enumerate(names)}
                    send(signed_in(client, user), "get", url, rotated, who)
                    if posts:
                        send(signed_in(client, user), "post", url, rotated, who)
                for name in own:
                    for value in HOSTILE:
                        send(signed_in(client, user), "get", url, {**baseline, name: value}, who)
                        if posts:
                            send(signed_in(client, user), "post", url, {name: value}, who)
    elapsed = time.monotonic() - started
    print(
        f"page fuzz: {count} requests, {len(live)} URLs reached ({len(all_routes)} routes, {len(names)} "
        f"parameter names) in {elapsed:.1f} s"
    )
    assert {"anonymous /admin/login/", "member /datasets/demo/significance/"} <= set(live)
    assert not failures, f"{len(failures)} server errors:\n" + "\n".join(failures[:60])


# ---------------------------------------------------------------------------------------------
# 2. CSV downloads a spreadsheet cannot turn into formulas


def test_spreadsheet_cells():
    from decimal import Decimal

    from plumbing.spreadsheets import SafeWriter, spreadsheet_cell

    for formula in ("=1+2", "+cmd", "-2+3", "@SUM(A1)", "\t=1", "\r=1", '=HYPERLINK("http://x")', "-"):
        assert spreadsheet_cell(formula) == "'" + formula
    for text in ("a dog", "", " =1", "1-2", "'=1", "日本語"):
        assert spreadsheet_cell(text) == text
    for number in (-1.5, -3, 0, 2.5, Decimal("-0.5"), True, float("nan")):
        assert spreadsheet_cell(number) is number
    assert spreadsheet_cell(None) is None
    assert spreadsheet_cell(Path("-x")) == "'-x"
    out = io.StringIO()
    SafeWriter(out).writerow(["=cmd", -0.25, None, "ok"])
    assert out.getvalue() == "'=cmd,-0.25,,ok\r\n"


def test_downloads_neutralise_formulas_and_keep_numbers(world, client):
    from catalog.models import Item

    caption = world["public"].system.captions.get(text='=HYPERLINK("http://x")')
    Item.objects.filter(pk=caption.item_id).update(external_id="@SUM(A1)")

    def download(query: str) -> list[dict]:
        response = client.get(f"/submissions/{world['public'].pk}/scores.csv{query}")
        return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))

    wide = download("")  # one row per caption, metrics as columns (points)
    assert len(wide) == 100
    row = next(row for row in wide if row["caption"].endswith('HYPERLINK("http://x")'))
    assert row["image_id"] == "'@SUM(A1)"
    assert row["caption"] == '\'=HYPERLINK("http://x")'
    assert float(row["bleu_4"]) == -25.0
    assert row["errors"] == "bleu_4: -not a formula"  # begins with the metric's name: no formula
    rows = download("?layout=long")  # one row per (caption, metric)
    assert len(rows) == 100
    formula = next(row for row in rows if row["caption"].endswith('HYPERLINK("http://x")'))
    assert formula == {
        "image_id": "'@SUM(A1)",
        "caption": '\'=HYPERLINK("http://x")',
        "metric": "bleu_4",
        "metric_version": world["metric"].current_version.config_hash,
        "value": "-0.25",
        "points": "-25.0",
        "error": "'-not a formula",
    }
    assert float(formula["value"]) == -0.25  # a number, not text a spreadsheet shows quoted
    assert float(formula["points"]) == -25.0  # and in points, as the pages show it
    board = client.get(f"/datasets/{world['dataset'].slug}/leaderboard/", {"download": "csv", "sort": "bleu_4"})
    assert board.status_code == 200
    assert board["Content-Type"].startswith("text/csv")
    lines = board.content.decode().splitlines()
    rows = list(csv.DictReader(io.StringIO(board.content.decode())))
    submitted = next(row for row in rows if row["name"].endswith("+cmd"))
    # The board's CSV shows numbers as the page does (×100 for BLEU): a number still, never a formula.
    assert submitted["name"] == "'+cmd" and submitted["bleu_4"] == "-150.0", lines[:3]
    assert not any(
        cell.startswith(("=", "+", "-", "@")) and not _is_number(cell)
        for row in csv.reader(io.StringIO(board.content.decode()))
        for cell in row
    )


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# 3. A server error is logged once


def _outputs(record: logging.LogRecord) -> list[logging.Handler]:
    """The handlers (pytest's own left out) that write `record` on its way up to the root."""
    reached, logger = [], logging.getLogger(record.name)
    while logger is not None:
        reached += [
            handler
            for handler in logger.handlers
            if not type(handler).__module__.startswith("_pytest")
            and record.levelno >= handler.level
            and handler.filter(record)
        ]
        logger = logger.parent if logger.propagate else None
    return reached


@override_settings(ROOT_URLCONF="tests.platform.security.broken_urls")
@pytest.mark.parametrize("debug", [False, True])
def test_a_server_error_is_logged_once(caplog, settings, debug):
    settings.DEBUG = debug  # Django's own console handler writes only under DEBUG
    with caplog.at_level(logging.INFO):
        response = Client(raise_request_exception=False).get("/broken/")
    assert response.status_code == 500
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert len(errors) == 1, [(r.name, r.getMessage()) for r in errors]
    record = errors[0]
    assert record.name == "django.request"
    assert "/broken/" in record.getMessage()
    assert record.exc_info and isinstance(record.exc_info[1], RuntimeError)
    consoles = [h for h in _outputs(record) if isinstance(h, logging.StreamHandler)]
    assert len(consoles) == 1, consoles  # not Django's DEBUG console beside the root's
