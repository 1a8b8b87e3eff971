#!/usr/bin/env bash
# Every GPU benchmark in one command, each under its own time limit, each log kept:
#
#     bench/gpu.sh [LOGDIR] [embedding text judge vision sdxl residency pipeline]   (default: all, logs in bench-logs/)
#
# Needs a CUDA machine with torch and the project's model libraries (open_clip_torch, transformers,
# diffusers, ultralytics; bert-score and torchmetrics for the reference columns). No weights: every
# model is built at full size with random weights (bench/fullsize.py) and saved into a scratch model store.
set -u
cd "$(dirname "$0")/.."
logs=${1:-bench-logs}
shift || true
stages=${*:-embedding text judge vision sdxl residency pipeline}
mkdir -p "$logs"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error TQDM_DISABLE=1
python=${PYTHON:-python3}
# The scripts import the project as an installed package: install it (editable, no dependencies:
# a GPU machine without network has them or gets them as wheels) where it is not yet.
(cd / && "$python" -c "import capbench_eval") 2>/dev/null || "$python" -m pip install -q --no-deps --no-build-isolation -e . \
    || { echo "cannot install the project into $python: pip install -e . first"; exit 2; }
run() {  # name, seconds, command...
    local name=$1 limit=$2
    shift 2
    echo "== $name ($(date -u +%FT%TZ), limit ${limit} s)"
    timeout "$limit" "$python" "$@" 2>&1 | grep -v -E "^(Loading weights|Writing model shards)|it/s\]$" | tee "$logs/$name.log"
}
for stage in $stages; do
    case $stage in
        embedding) run embedding "${EMBEDDING_LIMIT:-600}" -m bench.embedding --naive 200 ;;
        text) run text "${TEXT_LIMIT:-200}" -m bench.text --naive 100 ;;
        judge) run judge "${JUDGE_LIMIT:-300}" -m bench.judge_local --size 7b ;;
        vision) run vision "${VISION_LIMIT:-420}" -m bench.vision --captions 32 --steps 28 --batch 4 ;;
        sdxl) run sdxl "${SDXL_LIMIT:-400}" -m bench.vision --t2i sdxl --size 1024 --captions 16 --steps 28 --batch 4 --naive 2 --no-hice ;;
        residency) run residency "${RESIDENCY_LIMIT:-150}" -m bench.residency --budget-gib 1.5 ;;
        # A real gpu-queue worker against PostgreSQL and Valkey (embedded unless DATABASE_URL / REDIS_URL
        # are set); needs the platform's own dependencies installed besides the model libraries.
        pipeline) export DJANGO_SETTINGS_MODULE=capbench.settings.local; run pipeline "${PIPELINE_LIMIT:-500}" \
            -m capbench.embedded --state-dir "${TMPDIR:-/tmp}/capbench-bench-state" -- sh -c \
            "$python manage.py migrate -v0 && $python -m bench.gpu_pipeline --concurrency 1 ${PIPELINE_ARGS:-} && $python -m bench.gpu_pipeline --concurrency 2 ${PIPELINE_ARGS:-}" ;;
        *) echo "unknown stage $stage (embedding, text, judge, vision, sdxl, residency, pipeline)"; exit 2 ;;
    esac
done
