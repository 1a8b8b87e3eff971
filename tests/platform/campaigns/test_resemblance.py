"""A duplicate account beyond the shared address: two accounts one person drives from two addresses
answer alike. Four honest annotators answer with noise of their own, two puppets answer the same to
every task: the pair of puppets is flagged, first, and no honest pair is; the organisers read it on
the campaign page and in the API, nobody else does."""

from __future__ import annotations

import random

import pytest
from django.test import Client

from campaigns.services.identity import answer_resemblance, binomial_tail, pseudonym
from tests.platform.campaigns.helpers import in_turns

pytestmark = pytest.mark.django_db


def puppets_and_honest(campaign, seed: int = 3):
    """Honest people: the caption's quality (by its system) with noise of their own per dimension.
    The puppets: one person's answer, the same for both accounts (a function of the caption)."""
    rng = random.Random(seed)

    def answer(task, user) -> dict:
        base = 4 if task.caption.system.name == "Careful" else 2
        if user.username.startswith("puppet"):
            mood = random.Random(task.caption_id)
            return {d["key"]: max(1, min(5, base + mood.choice((-1, 0, 1)))) for d in campaign.rubric}
        return {d["key"]: max(1, min(5, base + rng.choice((-1, 0, 0, 1)))) for d in campaign.rubric}

    return answer


def test_binomial_tail_is_the_chance_of_k_or_more():
    assert binomial_tail(0, 10, 0.3) == 1.0
    assert binomial_tail(11, 10, 0.3) == 0.0
    assert binomial_tail(10, 10, 0.5) == pytest.approx(0.5**10)
    assert binomial_tail(2, 3, 0.5) == pytest.approx(0.5)  # 3 + 1 of 8 outcomes
    assert binomial_tail(600, 2000, 0.25) == pytest.approx(2.33497840736e-7, rel=1e-9)  # scipy.stats.binom.sf(599, ...)


@pytest.mark.slow
def test_two_accounts_answering_alike_are_flagged_and_shown_to_the_organisers_only(make_campaign, make_user, staff):
    campaign = make_campaign(ratings_wanted=4, gold_rate=0)
    honest = [make_user(name) for name in ("ann", "ned", "eve", "ida")]
    puppets = [make_user("puppet-a"), make_user("puppet-b")]
    people = [honest[0], puppets[0], honest[1], honest[2], puppets[1], honest[3]]
    assert in_turns(campaign, people, puppets_and_honest(campaign), rounds=25) == 150

    found = answer_resemblance(campaign)
    pair = tuple(sorted(user.pk for user in puppets))
    first = found[0]
    assert (first.first, first.second) == pair and first.suspicious
    assert first.agreed == first.common >= 5
    assert first.p_value < 1e-6
    assert first.expected < 0.5  # the others agree far less often
    honest_pairs = [r for r in found if (r.first, r.second) != pair]
    assert honest_pairs and not any(r.suspicious for r in honest_pairs)
    assert all(r.common >= 5 for r in found)

    names = [pseudonym(campaign, user.pk) for user in puppets]
    staff_client = Client()
    staff_client.force_login(staff)
    page = staff_client.get(f"/campaigns/{campaign.slug}/").content.decode()
    assert 'id="resemblance"' in page
    flagged_row = page.split('<tr class="flagged">', 1)[1].split("</tr>", 1)[0]
    assert "puppet-a" in flagged_row
    assert "puppet-b" in flagged_row
    assert all(name in flagged_row for name in names)
    assert page.count('<tr class="flagged">') == 1
    api = staff_client.get(f"/api/v1/campaigns/{campaign.slug}/").json()
    assert api["resemblance"][0]["accounts"] == ["puppet-a", "puppet-b"] and api["resemblance"][0]["suspicious"]
    assert sum(row["suspicious"] for row in api["resemblance"]) == 1

    annotator = Client()
    annotator.force_login(honest[0])
    for client in (Client(), annotator):
        page = client.get(f"/campaigns/{campaign.slug}/").content.decode()
        assert "resemblance" not in page
        assert "puppet" not in page
        assert client.get(f"/api/v1/campaigns/{campaign.slug}/").json()["resemblance"] is None
