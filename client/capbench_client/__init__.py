"""CapBench's Python client: `Client` for the REST API, `capbench` on the command line (cli.py).

    from capbench_client import Client
    client = Client("https://capbench.example.org", token="…")
    submission = client.submit("coco-karpathy-test", "results.json", method_name="My captioner")
    client.wait(submission["id"])
    print(client.results(submission["id"])["results"])

Needs only `requests`; docs/client.md in the CapBench repository describes every call and command."""

from capbench_client.api import Client
from capbench_client.errors import (
    AuthenticationFailed,
    CapBenchError,
    Conflict,
    ConnectionFailed,
    InvalidRequest,
    NotFound,
    RateLimited,
    ServerError,
    WaitTimedOut,
)
from capbench_client.version import VERSION

__version__ = VERSION
__all__ = [
    "AuthenticationFailed",
    "CapBenchError",
    "Client",
    "Conflict",
    "ConnectionFailed",
    "InvalidRequest",
    "NotFound",
    "RateLimited",
    "ServerError",
    "WaitTimedOut",
    "__version__",
]
