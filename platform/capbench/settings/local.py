"""Developer machine and `make run`. DEBUG stays off unless asked for (`make dev`, DJANGO_DEBUG=1):
Django's debug error page shows every setting and the whole environment to whoever triggers it."""

from capbench.settings.base import *  # noqa: F401,F403
from capbench.settings.environment import env_bool

DEBUG = env_bool("DJANGO_DEBUG", False)
