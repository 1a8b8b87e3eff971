"""The notices accounts sends (docs/email.md): rendered from `templates/emails/<name>.txt` and
`<name>_subject.txt`, sent after the transaction that caused them commits. Mail is a courtesy here
as for scoring outcomes: a failing mail server is logged, never an error for the person."""

from __future__ import annotations

import hashlib
import logging

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.template.loader import render_to_string

log = logging.getLogger(__name__)


def mailbox_identity(email: str) -> str:
    """An e-mail address as a limit counts it: a digest, so no address is kept in Redis."""
    return "email:" + hashlib.sha256(email.strip().lower().encode()).hexdigest()[:32]


def notice_send(*, to: str, template: str, context: dict) -> bool:
    """Send one notice now; False (logged) when there is no address or the mail server fails."""
    if not to:
        return False
    context = {**context, "site_url": settings.SITE_URL}
    subject = " ".join(render_to_string(f"emails/{template}_subject.txt", context).split())
    body = render_to_string(f"emails/{template}.txt", context)
    try:
        EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [to]).send()
    except Exception:  # any transport error means the same: the notice is lost, the action stands
        log.exception("accounts: the %s notice could not be sent", template)
        return False
    return True


def notice_after_commit(*, to: str, template: str, context: dict) -> None:
    transaction.on_commit(lambda: notice_send(to=to, template=template, context=context))
