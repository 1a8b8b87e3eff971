"""Models kept on a GPU within a budget: loads full-size random CLIP ViT-B/32 (CLIP-S, PAC-S) and
roberta-large (BERTScore) under a small CAPBENCH_GPU_MODEL_MEMORY, and prints each model's measured
footprint, what was unloaded, the GPU memory torch holds after each step, and what reloading costs.

    python -m bench.residency [--budget-gib 1.5]      (bench/gpu.sh runs it as the `residency` stage)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from bench import fullsize


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-gib", type=float, default=1.5)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: nothing is tracked on a CPU")
        return 0
    store = Path(tempfile.gettempdir()) / "capbench-bench-residency" / "models"
    os.environ["CAPBENCH_MODEL_DIR"] = str(store)
    os.environ["CAPBENCH_GPU_MODEL_MEMORY"] = str(args.budget_gib)
    fullsize.open_clip_weights(store, "ViT-B-32-quickgelu")
    fullsize.pac_checkpoint(store)
    fullsize.roberta(store / "hf" / "roberta-large", fullsize.ROBERTA_LARGE)
    from capbench_eval.backbones.residency import GIB, RESIDENCY
    from capbench_eval.metrics import get

    clip, pac, bert = get("clip_s").encoder, get("pac_s").encoder, get("bertscore").embedder

    def step(name: str, model) -> None:
        started = time.perf_counter()
        model._load()
        torch.cuda.synchronize()
        seconds = time.perf_counter() - started
        kept = ", ".join(f"{type(m).__name__} {size / GIB:.2f} GiB" for m, size in RESIDENCY.footprints())
        print(
            f"{name:28} {seconds:6.2f} s; kept (least recent first): {kept}; unloaded so far {RESIDENCY.unloaded}; "
            f"torch holds {torch.cuda.memory_allocated() / GIB:.2f} GiB"
        )

    print(f"budget {args.budget_gib} GiB on {torch.cuda.get_device_name()}")
    step("CLIP-S encoder (fp16)", clip)
    step("PAC-S encoder (fp32)", pac)
    step("CLIP-S again (kept)", clip)
    step("BERTScore roberta-large", bert)
    step("PAC-S again", pac)
    return 0


if __name__ == "__main__":
    sys.exit(main())
