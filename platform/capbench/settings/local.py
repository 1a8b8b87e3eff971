"""Developer machine and `make run`."""
from capbench.settings.base import *  # noqa: F401,F403
from capbench.settings.environment import env_bool

DEBUG = env_bool("DJANGO_DEBUG", True)
