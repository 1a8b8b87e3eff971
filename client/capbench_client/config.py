"""The saved sign-in: `{"url": …, "token": …}` in config.json of the user's configuration folder.

The folder is `$CAPBENCH_CONFIG_DIR` if set, else `$XDG_CONFIG_HOME/capbench`, else
`~/.config/capbench` (on Windows `%APPDATA%\\capbench`). The token is a password: a folder the client
makes is created 0700, and the file is written to a temporary file opened 0600 beside it, then renamed over
the old one, so that it is never readable by others, not even for a moment, nor ever half-written."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

FILE_NAME = "config.json"


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where the configuration lives (see the module's docstring)."""
    env = os.environ if environ is None else environ
    if env.get("CAPBENCH_CONFIG_DIR"):
        return Path(env["CAPBENCH_CONFIG_DIR"]).expanduser()
    if env.get("XDG_CONFIG_HOME"):
        return Path(env["XDG_CONFIG_HOME"]).expanduser() / "capbench"
    if sys.platform == "win32" and env.get("APPDATA"):
        return Path(env["APPDATA"]) / "capbench"
    return Path("~").expanduser() / ".config" / "capbench"


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    return config_dir(environ) / FILE_NAME


def load(path: Path | None = None) -> dict[str, str]:
    """The saved settings (string values only); {} when there are none or the file is unreadable."""
    path = path or config_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {key: value for key, value in data.items() if isinstance(value, str)} if isinstance(data, dict) else {}


def save(settings: Mapping[str, str], path: Path | None = None) -> Path:
    """Write `settings` to the configuration file (0600, in a 0700 folder), atomically; its path."""
    path = path or config_path()
    folder = path.parent
    if not folder.exists():
        folder.mkdir(mode=0o700, parents=True)
        if os.name == "posix":
            os.chmod(folder, 0o700)  # whatever the umask made of it (a folder named by the user is left as it is)
    text = json.dumps(dict(settings), indent=2) + "\n"
    # mkstemp opens the temporary file O_CREAT|O_EXCL with mode 0600, whatever the umask.
    descriptor, temporary = tempfile.mkstemp(prefix=".config-", suffix=".tmp", dir=folder)
    try:
        if os.name == "posix":
            os.fchmod(descriptor, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def too_open(path: Path | None = None) -> bool:
    """Whether the saved file can be read or written by others than its owner (a copy made by hand,
    an old file): the token in it should be replaced (POSIX only)."""
    path = path or config_path()
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return os.name == "posix" and bool(mode & 0o077)


def remove(path: Path | None = None) -> bool:
    """Delete the saved settings; whether there were any."""
    path = path or config_path()
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True
