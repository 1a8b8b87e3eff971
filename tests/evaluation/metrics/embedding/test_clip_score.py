"""CLIP-S, RefCLIP-S, PAC-S and RefPAC-S: formulas on fixed embeddings, and the real loading path
on a tiny random CLIP (batching, the feature cache, checkpoints, honest refusal without weights)."""

import math

import numpy as np
import pytest

from capbench_eval.metrics import CaptionRow, MetricUnavailable
from capbench_eval.metrics.embedding.clip_score import (
    PREFIX,
    ClipScore,
    PacScore,
    RefClipScore,
    RefPacScore,
    clip_s,
    harmonic_mean,
    reference_term,
)


def unit(angle: float) -> np.ndarray:
    return np.array([math.cos(angle), math.sin(angle)])


def test_clip_s_is_w_times_the_clipped_cosine():
    images = np.stack([unit(0), unit(0), unit(0)])
    texts = np.stack([unit(math.pi / 3), unit(0), unit(2 * math.pi / 3)])  # cos 0.5, 1, -0.5
    assert clip_s(images, texts, 2.5) == pytest.approx([1.25, 2.5, 0.0])
    assert clip_s(images, texts, 2.0) == pytest.approx([1.0, 2.0, 0.0])


def test_reference_term_is_the_raw_maximum_and_may_be_negative():
    candidate = unit(0)
    assert reference_term(candidate, np.stack([unit(math.pi / 3), unit(math.pi / 2)])) == pytest.approx(0.5)
    assert reference_term(candidate, np.stack([unit(2 * math.pi / 3)])) == pytest.approx(-0.5)  # not clipped


def test_harmonic_mean_edges():
    assert harmonic_mean(1.0, 0.5) == pytest.approx(2 / 3)
    assert harmonic_mean(0.0, 0.0) == 0.0
    assert harmonic_mean(0.0, 0.7) == 0.0


def rows(images, refs=True):
    captions = ["a red square", "noise in many colours", "a photo of static", "two cats", "a dog running"]
    references = [
        ("a colourful noise image", "random pixels"),
        ("static",),
        ("noise", "a test pattern"),
        ("pixels",),
        ("an abstract picture", "colours"),
    ]
    return [CaptionRow(str(i), c, references[i] if refs else (), images[i]) for i, c in enumerate(captions)]


def independent_clip_s(store, image_paths, captions, w):
    """The same number straight from open_clip, without our encoder."""
    import open_clip
    import torch
    from PIL import Image

    model, _, preprocess = open_clip.create_model_and_transforms(
        "ViT-B-32-quickgelu", pretrained=str(store / "open_clip" / "ViT-B-32-quickgelu" / "openai.pt")
    )
    tokenizer = open_clip.get_tokenizer("ViT-B-32-quickgelu")
    with torch.no_grad():
        image = model.encode_image(torch.stack([preprocess(Image.open(p).convert("RGB")) for p in image_paths]))
        text = model.encode_text(tokenizer([PREFIX + c for c in captions]))
    image = image / image.norm(dim=-1, keepdim=True)
    text = text / text.norm(dim=-1, keepdim=True)
    return (w * torch.clamp((image * text).sum(-1), min=0)).numpy()


def test_clip_s_through_the_real_loading_code_matches_open_clip_directly(model_store, images):
    batch = rows(images)
    result = ClipScore().score(batch)
    expected = independent_clip_s(model_store, images, [row.candidate for row in batch], 2.5)
    assert result.scores == pytest.approx(expected.tolist(), abs=1e-5)
    assert all(0 <= value <= 2.5 for value in result.scores)
    assert result.corpus == pytest.approx(float(np.mean(result.scores)))


def test_batched_equals_one_by_one(model_store, images):
    metric, batch = RefClipScore(), rows(images)
    together = metric.score(batch).scores
    alone = [metric.score([row]).scores[0] for row in batch]
    assert together == pytest.approx(alone, abs=1e-6)


def test_ref_clip_s_is_the_harmonic_mean_with_prefixed_references(model_store, images):
    batch = rows(images)
    result = RefClipScore().score(batch)
    encoder = RefClipScore().encoder
    for row, value, detail in zip(batch, result.scores, result.details, strict=True):
        candidate = encoder.encode_texts([PREFIX + row.candidate])[0]
        refs = encoder.encode_texts([PREFIX + ref for ref in row.references])
        assert detail["reference_term"] == pytest.approx(reference_term(candidate, refs), abs=1e-6)
        assert value == pytest.approx(harmonic_mean(detail["image_score"], detail["reference_term"]), abs=1e-6)
    unprefixed = encoder.encode_texts([batch[0].references[0]])[0]
    prefixed = encoder.encode_texts([PREFIX + batch[0].references[0]])[0]
    assert not np.allclose(unprefixed, prefixed)  # the prefix matters, and it is applied to references


def test_image_features_are_cached_on_disk_and_identical_texts_encoded_once(model_store, images, tmp_path):
    metric = ClipScore()
    first = metric.score(rows(images)).scores
    encoder = metric.encoder
    assert encoder.images_encoded == 5
    assert len(list((tmp_path / "features").rglob("*.npy"))) == 5
    again = metric.score(rows(images)).scores  # a new submission on the same images
    assert encoder.images_encoded == 5
    assert again == pytest.approx(first, abs=1e-6)
    duplicates = [CaptionRow(str(i), "the same caption", (), images[i % 2]) for i in range(6)]
    scores = metric.score(duplicates).scores
    assert scores[0] == scores[2] == scores[4]
    assert scores[1] == scores[3] == scores[5]


def test_pac_s_loads_its_checkpoint_over_the_backbone(model_store, images, pac_checkpoint):
    batch = rows(images)
    pac, clip = PacScore().score(batch).scores, ClipScore().score(batch).scores
    assert all(0 <= value <= 2.0 for value in pac)
    assert not np.allclose(np.array(pac) / 2.0, np.array(clip) / 2.5)  # different weights
    assert RefPacScore().score(batch).details[0].keys() == {"image_score", "reference_term"}
    assert PacScore().config()["weights"].count("/") == 3  # backbone name, its sha, the checkpoint's sha


def test_without_a_checkpoint_pac_s_refuses_and_says_why(model_store, images):
    availability = PacScore().availability()
    assert not availability.available and "pacscore/clip_ViT-B-32.pth" in availability.reason
    with pytest.raises(MetricUnavailable, match="checkpoint pacscore/clip_ViT-B-32.pth is not in the model store"):
        PacScore().score(rows(images))


def test_without_any_weights_every_clip_metric_refuses(tmp_path, monkeypatch, images):
    from capbench_eval.backbones.clip import clip_encoder

    monkeypatch.setenv("CAPBENCH_MODEL_DIR", str(tmp_path / "empty"))
    clip_encoder.cache_clear()
    for metric in (ClipScore(), RefClipScore()):
        assert "weights are not in the model store" in metric.availability().reason
        with pytest.raises(MetricUnavailable):
            metric.score(rows(images))
    clip_encoder.cache_clear()


def test_new_weights_make_a_new_metric_version(model_store):
    import torch

    before = ClipScore().config_hash()
    weights = model_store / "open_clip" / "ViT-B-32-quickgelu" / "openai.pt"
    state = torch.load(weights, weights_only=True)
    state["logit_scale"] = state["logit_scale"] + 1
    torch.save(state, weights)
    assert ClipScore().config_hash() != before


def test_refclip_s_reuses_the_candidates_clip_s_encoded(model_store, images):
    batch = rows(images)
    clip_scores = ClipScore().score(batch).scores
    encoder = ClipScore().encoder
    encoded = encoder.texts_encoded
    result = RefClipScore().score(batch)
    references = {PREFIX + ref for row in batch for ref in row.references}
    assert encoder.texts_encoded - encoded == len(references)  # the candidates came from memory
    assert [detail["image_score"] for detail in result.details] == pytest.approx(clip_scores, abs=1e-6)
