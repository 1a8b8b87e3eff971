"""`pip install ./evaluation` alone, in a fresh virtual environment with no Django and no torch: the
library imports, passes its doctests, names the extra a model metric needs, and scores BLEU, METEOR,
ROUGE-L and CIDEr-D on the demo's captions with the numbers, intervals and signatures this
environment's copy of the same code gives (the platform's)."""

import json
import shutil
import subprocess
import sys
import venv

import pytest

from capbench_eval import score
from capbench_eval.version import VERSION

pytestmark = pytest.mark.slow

METRICS = ("bleu_4", "meteor", "rouge_l", "cider_d")
DOCTESTED = ("capbench_eval.library", "capbench_eval.signatures", "capbench_eval.coco")

SCRIPT = """
import doctest, importlib, json, sys
from capbench_eval import score
from capbench_eval.metrics import get
failed = {name: doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE).failed
          for name in sys.argv[2].split(",")}
captions = json.loads(open(sys.argv[1]).read())
out = {"doctests": failed, "clip_s": get("clip_s").unavailable_reason()}
for slug in sys.argv[3].split(","):
    found = score(slug, captions["candidates"], captions["references"], images=captions["images"])
    out[slug] = [found.scores, found.value, found.low, found.high, found.signature]
out["loaded"] = sorted({m.split(".")[0] for m in sys.modules} & {"django", "torch", "transformers", "PIL", "open_clip"})
print(json.dumps(out))
"""


def demo_captions(repo_root) -> dict:
    """The demo's judged captions (one per judged pair, in file order) and their image's five
    references, read from the shipped Flickr8k files."""
    folder = repo_root / "demo" / "flickr8k-expert"
    texts = dict(line.split("\t", 1) for line in folder.joinpath("Flickr8k.token.txt").read_text().splitlines() if line)
    candidates, references, images = {}, {}, {}
    for number, line in enumerate(folder.joinpath("ExpertAnnotations.txt").read_text().splitlines()):
        image, caption = line.split("\t")[:2]
        key = f"{number}:{caption}"
        candidates[key] = texts[caption].strip()
        references[key] = [texts[f"{image}#{k}"].strip() for k in range(5)]
        images[key] = image
    return {"candidates": candidates, "references": references, "images": images}


def test_the_library_installs_alone_and_scores_the_demo_as_the_platform_does(repo_root, tmp_path):
    source = tmp_path / "evaluation"
    shutil.copytree(
        repo_root / "evaluation", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=False)
    python = environment / "bin" / "python"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--disable-pip-version-check", str(source)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    packages = {path.name.split("-")[0].lower() for path in environment.glob("lib/python*/site-packages/*.dist-info")}
    assert "capbench_eval" in packages
    assert not packages & {"django", "torch", "transformers", "open_clip_torch", "diffusers", "celery", "pillow"}

    captions = demo_captions(repo_root)
    (tmp_path / "captions.json").write_text(json.dumps(captions))
    ran = subprocess.run(
        [str(python), "-c", SCRIPT, str(tmp_path / "captions.json"), ",".join(DOCTESTED), ",".join(METRICS)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    there = json.loads(ran.stdout.splitlines()[-1])
    assert there["doctests"] == dict.fromkeys(DOCTESTED, 0)
    assert there["loaded"] == []
    assert "pip install 'capbench-eval[clip]'" in there["clip_s"]
    assert len(captions["candidates"]) == 615
    for slug in METRICS:
        here = score(slug, captions["candidates"], captions["references"], images=captions["images"])
        scores, value, low, high, signature = there[slug]
        assert scores == here.scores, slug
        assert (value, low, high) == (here.value, here.low, here.high), slug
        assert low < value < high, slug
        assert signature == here.signature, slug
        assert signature.startswith(f"{slug}|")
        assert signature.endswith(f"|capbench-eval:{VERSION}")
