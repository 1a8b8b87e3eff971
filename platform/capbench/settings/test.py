"""The test suite: real PostgreSQL and Redis (DATABASE_URL / REDIS_URL), never SQLite or mocks."""
from capbench.settings.base import *  # noqa: F401,F403
from capbench.settings.base import STATE_DIR

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
MEDIA_ROOT = STATE_DIR / "test-media"
