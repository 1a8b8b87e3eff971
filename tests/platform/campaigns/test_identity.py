"""Never one's own captions: the owner of a submitted system is never shown them, nor is an account
that signed in from the same client address (a sock puppet): over every task until none is left,
and a forged task of the owner's caption is refused by the service and by the annotation page, with
nothing stored. An account seen only at another address is not excluded. Annotators are named by a
per-campaign pseudonym, never their account."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from campaigns.models import AccountAddress, Annotation
from campaigns.services.answers import AnswerRefused, annotation_answer
from campaigns.services.assignment import excluded_systems, task_next
from campaigns.services.identity import address_seen, linked_accounts, pseudonym
from catalog.models import Caption, Judgment
from tests.platform.campaigns.helpers import until_none
from tests.platform.factories import PASSWORD

pytestmark = pytest.mark.django_db
HOME = "203.0.113.7"
ELSEWHERE = "198.51.100.9"
GOOD = {"accuracy": 4, "completeness": 4, "conciseness": 4, "relevance": 4}


def signed_in(username: str, address: str) -> Client:
    """A real sign-in through the login page from `address` (the user_logged_in signal records it)."""
    client = Client(REMOTE_ADDR=address)
    response = client.post("/accounts/login/", {"username": username, "password": PASSWORD})
    assert response.status_code == 302, response.content[:500]
    return client


def test_neither_the_owner_nor_a_sock_puppet_is_shown_the_owners_captions(make_campaign, make_user, submitted):
    ada_submission, bob_submission = submitted
    ada = ada_submission.owner
    pip, cal = make_user("pip"), make_user("cal")  # pip: no submission, same address as Ada; cal: elsewhere
    signed_in("ada", HOME)
    pip_client = signed_in("pip", HOME)
    signed_in("cal", ELSEWHERE)
    assert AccountAddress.objects.filter(user=pip).count() == 1  # a digest, never the address itself
    assert not AccountAddress.objects.filter(digest__contains=HOME).exists()
    assert linked_accounts(pip.pk) == {pip.pk, ada.pk}
    assert linked_accounts(cal.pk) == {cal.pk}

    campaign = make_campaign(ratings_wanted=1, gold_rate=0)
    assert excluded_systems(campaign, ada.pk) == excluded_systems(campaign, pip.pk) == {ada_submission.system_id}
    assert excluded_systems(campaign, cal.pk) == set()
    # Pip rates everything Pip may: Bob's 100 captions, none of Ada's.
    done = until_none(campaign, pip, lambda task: GOOD)
    assert len(done) == 100
    assert {task.caption.system_id for task in done} == {bob_submission.system_id}
    # Ada is never given her own captions: Bob's are all rated, so nothing is left for her.
    assert task_next(campaign=campaign, annotator=ada) is None
    # Cal, seen elsewhere, is given Ada's.
    assert task_next(campaign=campaign, annotator=cal).caption.system_id == ada_submission.system_id

    # A forged task of Ada's caption for Pip is refused and stores nothing.
    ada_caption = Caption.objects.filter(system=ada_submission.system).first()
    forged = Annotation.objects.create(campaign=campaign, annotator=pip, item=ada_caption.item, caption=ada_caption)
    judgments = Judgment.collected.filter(source=campaign.source)
    before = judgments.count()
    with pytest.raises(AnswerRefused, match="your own submissions"):
        annotation_answer(annotation_id=forged.pk, annotator=pip, values=GOOD)
    assert judgments.count() == before
    assert not judgments.filter(caption=ada_caption).exists()
    assert Annotation.objects.get(pk=forged.pk).status != Annotation.Status.ANSWERED

    # Through the annotation page too: 400, nothing stored.
    Annotation.objects.filter(pk=forged.pk).update(status=Annotation.Status.SKIPPED)
    forged = Annotation.objects.create(campaign=campaign, annotator=pip, item=ada_caption.item, caption=ada_caption)
    response = pip_client.post(
        f"/campaigns/{campaign.slug}/annotate/",
        {"task": forged.pk, **{f"dim-{key}": value for key, value in GOOD.items()}},
    )
    assert response.status_code == 400
    assert judgments.count() == before
    assert not judgments.filter(caption=ada_caption).exists()
    assert not Annotation.objects.filter(pk=forged.pk, status=Annotation.Status.ANSWERED).exists()
    assert ada_caption.text not in response.content.decode()  # the page does not show it either


def test_an_account_linked_after_its_task_was_given_cannot_answer_it(make_campaign, make_user, submitted):
    ada = submitted[0].owner
    pip = make_user("pip")
    campaign = make_campaign(ratings_wanted=1, gold_rate=0)
    tasks = []
    while True:  # Pip's first task of Ada's captions (the systems alternate)
        task = task_next(campaign=campaign, annotator=pip)
        if task.caption.system_id == submitted[0].system_id:
            break
        annotation_answer(annotation_id=task.pk, annotator=pip, values=GOOD)
        tasks.append(task)
    address_seen(user_id=ada.pk, address=HOME)
    address_seen(user_id=pip.pk, address=HOME)
    with pytest.raises(AnswerRefused):
        annotation_answer(annotation_id=task.pk, annotator=pip, values=GOOD)
    assert not Judgment.collected.filter(source=campaign.source, caption_id=task.caption_id).exists()
    # the reload drops it and gives one of Bob's
    again = task_next(campaign=campaign, annotator=pip)
    assert again.pk != task.pk
    assert again.caption.system_id == submitted[1].system_id


def test_addresses_seen_long_ago_link_no_one(make_user, settings):
    from datetime import timedelta

    from django.utils import timezone

    ada, pip = make_user("ada"), make_user("pip")
    address_seen(user_id=ada.pk, address=HOME)
    address_seen(user_id=pip.pk, address=HOME)
    assert linked_accounts(pip.pk) == {pip.pk, ada.pk}
    old = timezone.now() - timedelta(days=settings.CAPBENCH_LINKED_ADDRESS_DAYS + 1)
    AccountAddress.objects.filter(user=ada).update(last_seen=old)
    assert linked_accounts(pip.pk) == {pip.pk}


def test_sign_ins_without_a_client_address_link_no_one(make_user):
    """A request whose address cannot be read (client_address says "unknown") is no shared address."""
    ada, pip = make_user("ada"), make_user("pip")
    for user in (ada, pip):
        Client().force_login(user)  # Django's login() on a request without REMOTE_ADDR: the signal runs
    assert linked_accounts(pip.pk) == {pip.pk}
    assert linked_accounts(ada.pk) == {ada.pk}
    signed_in("ada", "")
    signed_in("pip", "")
    assert linked_accounts(pip.pk) == {pip.pk}
    assert not AccountAddress.objects.exists()


def test_pseudonyms_are_stable_per_campaign_and_unlinkable_across(make_campaign, make_user):
    ann = make_user("ann")
    first, second = make_campaign("first"), make_campaign("second")
    name = pseudonym(first, ann.pk)
    assert re.fullmatch(r"annotator-[0-9a-f]{12}", name)
    assert name == pseudonym(first, ann.pk) != pseudonym(second, ann.pk)
    assert name != pseudonym(first, make_user("ned").pk)


def test_an_upload_by_api_token_remembers_the_accounts_address(make_user, demo_dataset):
    """A submitter who works only from the command line is linked too: the address of any signed-in
    request that changes something is remembered, a token's included (read after the API's view)."""
    from django.test import Client
    from rest_framework.authtoken.models import Token

    cli_user = make_user("cli")
    client = Client(REMOTE_ADDR="198.51.100.7")
    answer = client.post(
        "/api/v1/submissions/",
        {"dataset": demo_dataset.slug, "name": "x"},  # refused (no file): the address is remembered anyway
        HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=cli_user).key}",
    )
    assert answer.status_code == 400
    assert AccountAddress.objects.filter(user=cli_user).count() == 1
    neighbour = make_user("neighbour")
    address_seen(user_id=neighbour.pk, address="198.51.100.7")
    assert linked_accounts(neighbour.pk) == {neighbour.pk, cli_user.pk}
    assert client.get("/api/v1/datasets/").status_code == 200  # a read remembers nothing more
    assert AccountAddress.objects.count() == 2
