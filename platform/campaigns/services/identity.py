"""Who an annotator is, as far as a campaign needs to know: a pseudonym per campaign (what exports
and judgments carry), the accounts taken for the same person (the sock-puppet rule), and which
annotators answer so alike that they may be one person (answer_resemblance: shown to the
organisers only)."""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Q
from django.utils import timezone

from campaigns.models import AccountAddress, Annotation, Campaign


def _keyed(*parts: object) -> str:
    message = "\x1f".join(str(part) for part in parts).encode()
    return hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).hexdigest()


def pseudonym(campaign: Campaign, user_id: int) -> str:
    """The annotator's name in one campaign's judgments and exports: stable within the campaign,
    unlinkable across campaigns and to the account without the server's secret key."""
    return f"annotator-{_keyed('campaign', campaign.pk, user_id)[:12]}"


def address_seen(*, user_id: int, address: str) -> None:
    """Remember that the account was used from `address` (a keyed digest of it, never the address).
    A request whose address cannot be read (plumbing.limits.client_address gives "unknown") shares it
    with no one: recorded, it would link every such account to every other."""
    if not address or address == "unknown":
        return
    AccountAddress.objects.update_or_create(
        user_id=user_id, digest=_keyed("address", address), defaults={"last_seen": timezone.now()}
    )


def linked_accounts(user_id: int) -> set[int]:
    """The account and every account seen at one of its addresses within the last
    CAPBENCH_LINKED_ADDRESS_DAYS days: taken for one person, none may rate the others' captions."""
    since = timezone.now() - timedelta(days=settings.CAPBENCH_LINKED_ADDRESS_DAYS)
    digests = AccountAddress.objects.filter(user_id=user_id, last_seen__gte=since).values("digest")
    linked = AccountAddress.objects.filter(Q(digest__in=digests), last_seen__gte=since).values_list(
        "user_id", flat=True
    )
    return {user_id, *linked}


# Answer patterns: a second account one person drives from another address escapes the address rule
# above, but it answers as its owner does. Two annotators who give the same answer to the same tasks
# far more often than the campaign's other annotators agree with one another are shown to the
# organisers (never published): a signal to look at, not a verdict.
RESEMBLANCE_MIN_COMMON = 5  # tasks both answered before a pair is judged at all
RESEMBLANCE_LEVEL = 0.001  # the chance, all pairs together (Bonferroni), of flagging an honest pair
TOGETHER_SECONDS = 10  # two answers to one task this close in time: "together"
RESEMBLANCE_WORDS = (
    "One person behind two accounts at two addresses escapes the address rule, but answers alike: each pair "
    f"of annotators with {RESEMBLANCE_MIN_COMMON} or more tasks in common (gold checks left out), how often "
    "they gave the same answer, how often two of the campaign's other annotators do, and the chance of that "
    f"much agreement at that rate; flagged under {RESEMBLANCE_LEVEL} shared among all the pairs. Together: "
    f"common tasks both answered within {TOGETHER_SECONDS} seconds. A signal to look at, never a verdict."
)


@dataclass(frozen=True)
class Resemblance:
    """How alike two annotators answer: on the `common` tasks both answered (a caption both rated
    or a pair both compared; gold checks left out), how often their answers were the same
    (`agreed`: every dimension, or the same caption chosen), against how often two of the
    campaign's other annotators give the same answer to a task (`expected`), the binomial chance
    of agreeing that often or more at that rate (`p_value`), and on how many common tasks both
    answered within TOGETHER_SECONDS of each other (`together`)."""

    first: int  # user ids, first < second
    second: int
    common: int
    agreed: int
    expected: float
    p_value: float
    together: int
    suspicious: bool

    @property
    def rate(self) -> float:
        return self.agreed / self.common if self.common else 0.0


def _answers(campaign: Campaign) -> dict[tuple, dict[int, tuple[str, datetime | None]]]:
    """task -> annotator -> (answer, when): a rating task is its caption, an arena task its pair
    (the answer names the caption chosen, whichever side it was shown on)."""
    tasks = (
        Annotation.objects.filter(campaign=campaign, status=Annotation.Status.ANSWERED, decoy__isnull=True)
        .order_by("id")
        .values_list("annotator_id", "caption_id", "other_id", "values", "winner", "answered_at")
    )
    found: dict[tuple, dict[int, tuple[str, datetime | None]]] = defaultdict(dict)
    for user, left, right, values, winner, when in tasks:
        if right is None:
            # django-stubs 6.1 types values_list() of a nullable foreign key as never None
            key: tuple = (left,)  # type: ignore[unreachable]
            answer = json.dumps(values or {}, sort_keys=True)
        else:
            key = tuple(sorted((left, right)))
            answer = {"left": str(left), "right": str(right)}.get(winner, "tie")
        found[key][user] = (answer, when)
    return found


def binomial_tail(k: int, n: int, p: float) -> float:
    """The chance of `k` or more successes in `n` independent tries of chance `p` (summed in log
    space: exact enough for thousands of tries, without loading scipy into a web process)."""
    if k <= 0 or p >= 1.0:
        return 1.0
    if p <= 0.0 or k > n:
        return 0.0
    head = math.lgamma(n + 1)
    logs = [
        head - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p) + (n - i) * math.log1p(-p)
        for i in range(k, n + 1)
    ]
    top = max(logs)
    return min(1.0, math.exp(top) * sum(math.exp(value - top) for value in logs))


def _chance(answers: dict[tuple, dict[int, tuple[str, datetime | None]]]) -> float:
    """How likely two answers to one task are the same when given independently at the campaign's
    rates (the sum of each answer's squared share): the baseline before any two people share a task."""
    counts = Counter(answer for by_user in answers.values() for answer, _ in by_user.values())
    total = sum(counts.values())
    return sum((count / total) ** 2 for count in counts.values()) if total else 0.0


def answer_resemblance(campaign: Campaign) -> list[Resemblance]:
    """Every pair of the campaign's annotators with RESEMBLANCE_MIN_COMMON tasks in common, most
    alike first (`p_value`); `suspicious` where the pair agrees more than the others' agreement
    makes likely at RESEMBLANCE_LEVEL over all the pairs compared. For its organisers only."""
    answers = _answers(campaign)
    common: Counter[tuple[int, int]] = Counter()
    agreed: Counter[tuple[int, int]] = Counter()
    together: Counter[tuple[int, int]] = Counter()
    for by_user in answers.values():
        users = sorted(by_user)
        for i, first in enumerate(users):
            for second in users[i + 1 :]:
                pair = (first, second)
                (a, at), (b, bt) = by_user[first], by_user[second]
                common[pair] += 1
                agreed[pair] += a == b
                if at is not None and bt is not None and abs((at - bt).total_seconds()) <= TOGETHER_SECONDS:
                    together[pair] += 1
    all_common, all_agreed = sum(common.values()), sum(agreed.values())
    chance = _chance(answers)
    judged = [pair for pair, count in common.items() if count >= RESEMBLANCE_MIN_COMMON]
    level = RESEMBLANCE_LEVEL / max(len(judged), 1)
    found = []
    for pair in judged:
        # The others' agreement: every other pair's common tasks (this pair's own left out).
        rest_common, rest_agreed = all_common - common[pair], all_agreed - agreed[pair]
        expected = rest_agreed / rest_common if rest_common else chance
        expected = min(max(expected, chance, 1e-9), 1.0)
        p_value = binomial_tail(agreed[pair], common[pair], expected)
        found.append(
            Resemblance(
                first=pair[0],
                second=pair[1],
                common=common[pair],
                agreed=agreed[pair],
                expected=expected,
                p_value=p_value,
                together=together[pair],
                suspicious=p_value < level,
            )
        )
    return sorted(found, key=lambda r: (r.p_value, -r.common, r.first, r.second))


@dataclass(frozen=True)
class NamedResemblance:
    """A resemblance as its organisers read it: both accounts and their pseudonyms in the campaign."""

    accounts: tuple[str, str]
    pseudonyms: tuple[str, str]
    found: Resemblance

    def json(self) -> dict:
        found = self.found
        return {
            "accounts": list(self.accounts),
            "annotators": list(self.pseudonyms),
            "common": found.common,
            "agreed": found.agreed,
            "rate": round(found.rate, 4),
            "expected": round(found.expected, 4),
            "p_value": found.p_value,
            "together": found.together,
            "suspicious": found.suspicious,
        }


def resemblance_named(campaign: Campaign) -> list[NamedResemblance]:
    """answer_resemblance with each annotator's account and pseudonym: for the organisers only."""
    found = answer_resemblance(campaign)
    users = {user for r in found for user in (r.first, r.second)}
    names = dict(get_user_model().objects.filter(pk__in=users).values_list("pk", "username"))
    return [
        NamedResemblance(
            (names.get(r.first, ""), names.get(r.second, "")),
            (pseudonym(campaign, r.first), pseudonym(campaign, r.second)),
            r,
        )
        for r in found
    ]
