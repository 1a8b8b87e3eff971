"""Operations endpoints: `/ops/metrics`, the workers' state in Prometheus' format, for staff signed
in or a scraper sending `Authorization: Bearer <CAPBENCH_OPS_TOKEN>`; anyone else gets a 404 (the
counts include private submissions' jobs). `/healthz`, for load balancers and container health
checks: 200 when this web process reaches the database and the broker, else 503; nothing more."""

from __future__ import annotations

import hmac

import redis
from django.conf import settings
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from plumbing import valkey
from scoring.monitoring import prometheus_text, work_now

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def allowed(request: HttpRequest) -> bool:
    if request.user.is_authenticated and request.user.is_staff:
        return True
    token = settings.CAPBENCH_OPS_TOKEN
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if not token or scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not allowed(request):
        raise Http404
    return HttpResponse(prometheus_text(work_now()), content_type=CONTENT_TYPE)


@never_cache
@require_GET
def health(request: HttpRequest) -> JsonResponse:
    checks = {"database": _database_answers(), "broker": _broker_answers()}
    return JsonResponse(
        {name: "ok" if ok else "unreachable" for name, ok in checks.items()},
        status=200 if all(checks.values()) else 503,
    )


def _database_answers() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except Exception:  # any driver error means the same to a load balancer
        return False


def _broker_answers() -> bool:
    try:
        return bool(valkey.client().ping())
    except redis.RedisError:
        return False
