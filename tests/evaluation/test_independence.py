"""`evaluation/` must run on a GPU box without Django: importing it loads no Django, DRF or Celery."""

import subprocess
import sys


def test_evaluation_imports_without_django(repo_root):
    code = (
        "import sys, capbench_eval, pkgutil, importlib\n"
        "for m in pkgutil.walk_packages(capbench_eval.__path__, 'capbench_eval.'):\n"
        "    if not m.name.endswith('__main__'):  # the CLI entry point runs when imported\n"
        "        importlib.import_module(m.name)\n"
        "assert 'capbench_eval.metrics.ngram.meteor' in sys.modules\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in {'django', 'rest_framework', 'celery'}]\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=repo_root, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
