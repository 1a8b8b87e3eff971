"""Deployment: every secret and the host names come from the environment; HTTPS only.

`manage.py check --deploy --fail-level WARNING` is clean with these settings (a test keeps it so).

Environment:
  DJANGO_SECRET_KEY (required)       50+ random characters.
  DJANGO_ALLOWED_HOSTS (required)    comma-separated host names the site answers to.
  DJANGO_CSRF_TRUSTED_ORIGINS        comma-separated origins (https://capbench.example) allowed to
                                     POST when they differ from the host.
  DJANGO_SECURE_SSL_REDIRECT=0       only behind a TLS-terminating proxy that already redirects
                                     plain HTTP itself (default on: Django redirects).
  DJANGO_SECURE_PROXY_SSL_HEADER     the header such a proxy sets to "https" on secure requests
                                     (e.g. X-Forwarded-Proto). Set it only when the proxy always
                                     overwrites that header: a client could otherwise claim HTTPS.
  DJANGO_SECURE_HSTS_SECONDS         default one year (31536000).
  DJANGO_SECURE_HSTS_PRELOAD=1       ask browsers' preload lists to include the domain (a
                                     commitment for the whole domain and its subdomains: opt-in).
  CAPBENCH_EMAIL_URL                 how mail leaves (smtp://…, smtps://…): unset, none is sent.
  CAPBENCH_SITE_URL                  what links in mail start with (default https:// and the
                                     first of DJANGO_ALLOWED_HOSTS).
  CAPBENCH_STAFF_2FA=0               let staff in with a password alone (default on: a TOTP code too).
"""

from django.core.exceptions import ImproperlyConfigured

from capbench.settings.base import *  # noqa: F401,F403
from capbench.settings.environment import env_bool, env_int, env_str
from capbench.settings.mail import mail_transport, sender, site_url, site_url_from_hosts
from capbench.settings.variables import env


def _required(name: str) -> str:
    value = env_str(name, "")
    if not value:
        raise ImproperlyConfigured(f"{name} must be set in production")
    return value


def _listed(raw: str) -> list[str]:
    return [part.strip() for part in raw.split(",") if part.strip()]


DEBUG = False
SECRET_KEY = _required("DJANGO_SECRET_KEY")
ALLOWED_HOSTS = _listed(_required("DJANGO_ALLOWED_HOSTS"))
CSRF_TRUSTED_ORIGINS = _listed(env_str("DJANGO_CSRF_TRUSTED_ORIGINS", ""))

# E-mail (docs/email.md): links start with https:// and the first allowed host unless
# CAPBENCH_SITE_URL says otherwise. Nothing is sent until CAPBENCH_EMAIL_URL names a mail server:
# never printed to the logs, where a password-reset link would open the account to their readers.
SITE_URL = site_url(env.site_url or site_url_from_hosts(ALLOWED_HOSTS))
_mail = mail_transport(env.email_url or "none:")
EMAIL_BACKEND = _mail.backend
EMAIL_HOST, EMAIL_PORT, EMAIL_HOST_USER, EMAIL_HOST_PASSWORD = _mail.host, _mail.port, _mail.user, _mail.password
EMAIL_USE_TLS, EMAIL_USE_SSL, EMAIL_FILE_PATH = _mail.use_tls, _mail.use_ssl, _mail.file_path
DEFAULT_FROM_EMAIL = SERVER_EMAIL = sender(SITE_URL, env.email_from)

# Staff sessions need a two-factor code (docs/security.md) unless CAPBENCH_STAFF_2FA=0 says otherwise.
_staff_2fa = env.staff_2fa
CAPBENCH_STAFF_2FA = True if _staff_2fa is None else _staff_2fa

# HTTPS only: plain HTTP is redirected, and browsers remember to use HTTPS for a year.
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
_proxy_header = env_str("DJANGO_SECURE_PROXY_SSL_HEADER", "").strip()
if _proxy_header:
    _meta_name = _proxy_header.upper().replace("-", "_")
    SECURE_PROXY_SSL_HEADER = (_meta_name if _meta_name.startswith("HTTP_") else f"HTTP_{_meta_name}", "https")
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 365 * 24 * 3600)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", False)
if not SECURE_HSTS_PRELOAD:
    # check --deploy asks for preload (W021); entering the preload lists is the domain owner's
    # decision, so it stays opt-in and the warning is silenced only while it is off.
    SILENCED_SYSTEM_CHECKS = ["security.W021"]

# Cookies: sent over HTTPS only; the session cookie is out of JavaScript's reach. The CSRF cookie
# stays readable: Swagger UI's "Try it out" copies it into the X-CSRFToken header.
SESSION_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SECURE = True
CSRF_COOKIE_SAMESITE = "Lax"

SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# Health checks come over plain HTTP from inside the container or the load balancer.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
