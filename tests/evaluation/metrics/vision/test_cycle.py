"""The cycle metrics on tiny random models through the real loading code: generation cached and
reproducible per caption, the T2I cycle score equal to an independent open_clip computation,
CAMScore's levels with their detail, its fusion trained and applied."""

import math

import numpy as np
import pytest
from PIL import Image

from capbench_eval.backbones.catalogue import CATALOGUE
from capbench_eval.backbones.t2i import GenerationSettings, TextToImage, caption_seed, generated_path
from capbench_eval.metrics import CaptionRow, MetricUnavailable, get
from capbench_eval.metrics.vision.fusion import LEVELS, Fusion, fusion_inputs, save_fusion, train_fusion
from capbench_eval.metrics.vision.levels import pixel_distance


@pytest.fixture
def photos(tmp_path):
    rng = np.random.default_rng(3)
    paths = []
    for index in range(2):
        path = tmp_path / f"photo-{index}.png"
        Image.fromarray(rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)).save(path)
        paths.append(str(path))
    return paths


@pytest.mark.slow  # over 5 s of CPU (issue 40)
def test_each_caption_has_its_own_picture_made_once_whatever_its_batch(vision_store, tmp_path, monkeypatch):
    generator = TextToImage(GenerationSettings.from_environment(), batch=2)
    first = generator.pictures(["a dog on grass", "a red bus", "a dog on grass"])
    assert generator.generated == 2
    assert first[0] == first[2]
    assert first[0] != first[1]
    assert Image.open(first[0]).size == (64, 64)
    again = generator.pictures(["a red bus"])
    assert generator.generated == 2
    assert again == [first[1]]  # from the cache
    monkeypatch.setenv("CAPBENCH_GENERATED_DIR", str(tmp_path / "elsewhere"))
    alone = TextToImage(GenerationSettings.from_environment(), batch=1).pictures(["a red bus"])[0]
    difference = np.abs(np.asarray(Image.open(alone), dtype=int) - np.asarray(Image.open(first[1]), dtype=int))
    assert difference.max() <= 2  # batched or alone: the same picture
    other = TextToImage(
        GenerationSettings.from_environment().__class__(
            **{**GenerationSettings.from_environment().__dict__, "steps": 3}
        )
    )
    assert other.key("a red bus") != generator.key("a red bus")  # steps are part of the key
    assert caption_seed("a red bus", 0) == caption_seed("a red bus", 0) != caption_seed("a red bus", 1)
    assert generated_path("../../etc/passwd") is None
    assert generated_path("0" * 64) is None


def test_a_missing_pipeline_says_so_and_how_to_get_it(vision_store, monkeypatch):
    monkeypatch.setenv("CAPBENCH_T2I_MODEL", "black-forest-labs/FLUX.1-dev")
    availability = get("t2i_cycle").availability()
    assert not availability.available and "FLUX.1-dev pipeline is not in the model store" in availability.reason
    with pytest.raises(MetricUnavailable, match="models fetch black-forest-labs/FLUX.1-dev"):
        get("t2i_cycle").score([CaptionRow("1", "a dog", (), None)])
    monkeypatch.setenv("CAPBENCH_T2I_MODEL", "roberta-large")
    assert "is not a text-to-image pipeline of the catalogue" in get("camscore").availability().reason


def test_t2i_cycle_is_the_cosine_of_the_two_pictures_image_features(vision_store, photos):
    import open_clip
    import torch

    rows = [
        CaptionRow("1", "a dog on grass", (), photos[0]),
        CaptionRow("2", "a red bus", (), photos[1]),
        CaptionRow("3", "no picture", (), None),
    ]
    result = get("t2i_cycle").score(rows)
    assert math.isnan(result.scores[2])
    assert "no image" in result.details[2]["error"]
    spec = CATALOGUE["EVA01-g-14/laion400m_s11b_b41k"]
    model, _, preprocess = open_clip.create_model_and_transforms("EVA01-g-14", pretrained=str(spec.weights()))
    model.eval()
    for row, value, detail in zip(rows[:2], result.scores, result.details, strict=False):
        generated = generated_path(detail["generated_image"])
        assert generated is not None
        assert detail["seed"] == caption_seed(row.candidate, 0)
        with torch.no_grad():
            features = model.encode_image(
                torch.stack([preprocess(Image.open(p).convert("RGB")) for p in (row.media, generated)])
            )
        features = torch.nn.functional.normalize(features, dim=-1)
        assert value == pytest.approx(float(features[0] @ features[1]), abs=1e-5)
    assert result.corpus == pytest.approx(np.mean(result.scores[:2]))


@pytest.mark.slow  # over 5 s of CPU (issue 40)
def test_camscore_levels_are_kept_with_boxes_and_matches(vision_store, photos):
    import open_clip
    import torch
    from transformers import AutoImageProcessor, AutoModelForDepthEstimation

    from capbench_eval.metrics.vision.levels import scale_invariant_log_error

    metric = get("camscore")
    rows = [
        CaptionRow("1", "a dog on grass", (), photos[0]),
        CaptionRow("2", "x", (), None),
        CaptionRow("3", "a red bus", (), photos[1]),
    ]
    kept, details = metric.levels(rows, chunk=1)
    assert kept == [0, 2]
    assert "error" in details[1]
    for row, detail in zip([rows[0], rows[2]], [details[0], details[2]], strict=True):
        assert set(LEVELS) <= set(detail)
        assert all(math.isfinite(detail[name]) for name in LEVELS)
        squares = [
            Image.open(p).convert("RGB").resize((512, 512), Image.Resampling.BICUBIC)
            for p in (row.media, generated_path(detail["generated_image"]))
        ]
        assert detail["pixel"] == pytest.approx(pixel_distance(*(np.asarray(s) / 255 for s in squares)))
        spec = CATALOGUE["ViT-B-16-quickgelu/openai"]
        model, _, preprocess = open_clip.create_model_and_transforms(
            "ViT-B-16-quickgelu", pretrained=str(spec.weights())
        )
        with torch.no_grad():
            features = torch.nn.functional.normalize(
                model.eval().encode_image(torch.stack([preprocess(s) for s in squares])), dim=-1
            )
        assert detail["semantic"] == pytest.approx(float(features[0] @ features[1]), abs=1e-5)
        folder = CATALOGUE["depth-anything/Depth-Anything-V2-Large-hf"].folder
        processor, depth = (
            AutoImageProcessor.from_pretrained(folder),
            AutoModelForDepthEstimation.from_pretrained(folder),
        )
        with torch.no_grad():
            maps = depth(**processor(images=squares, return_tensors="pt")).predicted_depth
        maps = torch.nn.functional.interpolate(maps[:, None], size=(512, 512), mode="bicubic", align_corners=False)[
            :, 0
        ]
        assert detail["depth"] == pytest.approx(scale_invariant_log_error(maps[1].numpy(), maps[0].numpy()), rel=1e-4)
        assert detail["boxes_original"] and detail["boxes_generated"]  # the random detector finds boxes
        assert all(0 <= v <= 1 for box in detail["boxes_original"] for v in box)
        assert len(detail["matches"]) == min(len(detail["boxes_original"]), len(detail["boxes_generated"]))
    assert (
        not metric.availability().available
        and "train it with `manage.py metrics train camscore" in metric.availability().reason
    )


@pytest.mark.slow  # over 5 s of CPU (issue 40)
def test_the_fusion_learns_a_monotone_relation_and_is_applied_with_its_record(vision_store, photos):
    rng = np.random.default_rng(0)
    levels = [{name: float(v) for name, v in zip(LEVELS, row, strict=True)} for row in rng.normal(size=(400, 5))]
    human = np.array([1 / (1 + math.exp(-(2 * row["semantic"] - row["pixel"]))) for row in levels], dtype=np.float32)
    x = fusion_inputs(levels)
    state, report = train_fusion(x[:300], human[:300], x[300:], human[300:], lr=3e-3, max_epochs=200, patience=30)
    assert report.best_tau > 0.7
    assert report.best_epoch <= report.epochs
    again, same = train_fusion(x[:300], human[:300], x[300:], human[300:], lr=3e-3, max_epochs=200, patience=30)
    assert same.best_tau == report.best_tau  # seeded: the same run twice
    path = CATALOGUE["camscore/fusion.pt"].path
    save_fusion(path, state, 32, {"dataset": "toy", "split": "train", "items": 300})
    try:
        metric = get("camscore")
        assert metric.availability().available
        assert metric.config()["fusion"]["trained_on"] == {"dataset": "toy", "split": "train", "items": 300}
        result = metric.score([CaptionRow("1", "a dog on grass", (), photos[0])])
        expected = Fusion.load(path)([{name: result.details[0][name] for name in LEVELS}])
        assert result.scores == pytest.approx(expected)
        assert 0 < result.scores[0] < 1
    finally:
        path.unlink()


def test_camscore_and_the_t2i_cycle_share_one_generation_per_caption(vision_store, photos):
    """The cycle metrics of one worker draw each caption's picture once: the second finds it stored."""
    from capbench_eval.backbones.t2i import GenerationSettings, text_to_image

    generator = text_to_image(GenerationSettings.from_environment())
    rows = [CaptionRow("1", "a dog on grass", (), photos[0]), CaptionRow("2", "a red bus", (), photos[1])]
    before = generator.generated
    cycle = get("t2i_cycle").score(rows)
    assert generator.generated - before == 2
    _, details = get("camscore").levels(rows, chunk=1)
    assert generator.generated - before == 2  # CAMScore read the cycle's pictures back
    assert [d["generated_image"] for d in details] == [d["generated_image"] for d in cycle.details]
