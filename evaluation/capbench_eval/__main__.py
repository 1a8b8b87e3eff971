import sys

from capbench_eval.cli import main

sys.exit(main())
