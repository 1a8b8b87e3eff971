"""`python -m capbench_client`: the `capbench` command."""

from capbench_client.cli import main

raise SystemExit(main())
