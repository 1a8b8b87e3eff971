"""HICE-S and RefHICE-S on tiny random models through the real loading code (Alpha-CLIP on open_clip,
SAM and the FACTUAL T5 through transformers, the proposer through ultralytics), with the alpha
branch checked against a 4-channel patch embedding and the scores recomputed from their parts."""

import math

import numpy as np
import pytest
from PIL import Image

from capbench_eval.backbones.alpha_clip import ALPHA_MEAN, ALPHA_STD, alpha_clip
from capbench_eval.backbones.scene_graph import phrase, triplets_from_output
from capbench_eval.metrics import CaptionRow, MetricUnavailable, get
from capbench_eval.metrics.vision.hice import ALPHA, BACKBONE, image_text, local_match
from capbench_eval.metrics.vision.levels import harmonic_mean


@pytest.fixture
def photo(tmp_path):
    path = tmp_path / "wide.png"
    Image.fromarray(np.random.default_rng(7).integers(0, 255, (40, 60, 3), dtype=np.uint8)).save(path)
    return str(path)


def test_factual_output_is_read_into_triplets_and_phrases():
    text = "( dog , is , brown ) , ( dog , on , grass ) , ( dog ) , ( dog , is , brown ) , ( broken , tuple ) , ( cat"
    assert triplets_from_output(text) == [("dog", "is", "brown"), ("dog", "on", "grass"), ("dog",)]
    assert [phrase(t) for t in triplets_from_output(text)] == ["dog is brown", "dog on grass", "dog"]
    assert triplets_from_output("") == []
    assert triplets_from_output("( , , )") == []


def test_local_precision_and_recall_by_hand():
    similarity = np.array([[0.2, 0.9], [0.5, 0.1], [0.3, 0.4]])  # 3 phrases × 2 regions
    precision, recall, per_phrase, per_region = local_match(similarity)
    assert precision == pytest.approx(0.6)
    assert recall == pytest.approx(0.7)
    assert per_phrase.tolist() == [0.9, 0.5, 0.4]
    assert per_region.tolist() == [0.5, 0.9]
    assert image_text(np.array([0.3, -0.2])).tolist() == pytest.approx([0.75, 0.0])


def test_masks_are_cropped_with_the_picture_and_normalised(vision_store, photo):
    encoder = alpha_clip(BACKBONE, ALPHA)
    picture = Image.open(photo).convert("RGB")  # 60 wide: the centre square is x 10..50
    left_third = np.zeros((40, 60), dtype=bool)
    left_third[:, :20] = True
    rgb, [alpha] = encoder.tensors(picture, [left_third])
    size = rgb.shape[-1]
    inside, outside = (1 - ALPHA_MEAN) / ALPHA_STD, (0 - ALPHA_MEAN) / ALPHA_STD
    assert inside == pytest.approx(1.923, abs=1e-3)
    assert float(alpha[0, :, 0].mean()) == pytest.approx(inside)  # x 10..20 of the crop's 40 is masked
    assert float(alpha[0, :, -1].mean()) == pytest.approx(outside)
    assert float((alpha[0, 0] > 0).float().mean()) == pytest.approx(0.25, abs=2 / size)


def test_the_alpha_branch_equals_a_four_channel_patch_embedding(vision_store, photo):
    import torch

    encoder = alpha_clip(BACKBONE, ALPHA)
    picture = Image.open(photo).convert("RGB")
    masks = [np.ones((40, 60), dtype=bool), np.eye(40, 60, dtype=bool) | np.eye(40, 60, k=5, dtype=bool)]
    ours = encoder.encode_regions(picture, masks)
    import open_clip

    state = encoder._load()[0].visual.state_dict()
    visual = open_clip.create_model("ViT-L-14-quickgelu", pretrained=None).visual.eval()  # a fresh tower, no hook
    alpha_weight = state.pop("conv1_alpha.weight")
    visual.load_state_dict(state)
    rgb_conv = visual.conv1
    joined = torch.nn.Conv2d(4, rgb_conv.out_channels, rgb_conv.kernel_size, rgb_conv.stride, bias=False)
    with torch.no_grad():
        joined.weight.copy_(torch.cat([rgb_conv.weight, alpha_weight], dim=1))
    visual.conv1.register_forward_hook(lambda module, inputs, output: joined(torch.cat([inputs[0], alphas], dim=1)))
    rgb, alpha_list = encoder.tensors(picture, masks)
    alphas = torch.stack(alpha_list)
    with torch.no_grad():
        expected = torch.nn.functional.normalize(visual(rgb[None].expand(2, -1, -1, -1)), dim=-1).numpy()
    assert ours == pytest.approx(expected, abs=1e-5)
    assert not np.allclose(ours[0], ours[1], atol=1e-3)  # the mask changes the feature


def test_hice_scores_are_the_harmonic_means_of_their_parts(vision_store, photo):
    rows = [
        CaptionRow("1", "a dog on the grass. the dog is brown.", ("a dog runs", "a brown dog"), photo),
        CaptionRow("2", "no picture", ("a dog",), None),
    ]
    hice = get("hice_s").score(rows)
    assert math.isnan(hice.scores[1])
    assert "no image" in hice.details[1]["error"]
    detail = hice.details[0]
    assert hice.scores[0] == pytest.approx(harmonic_mean([detail["global_itc"], detail["local_itc"]]))
    assert detail["local_itc"] == pytest.approx(harmonic_mean([detail["precision"], detail["recall"]]))
    assert detail["regions"] and all(r["box"] is None or len(r["box"]) == 4 for r in detail["regions"])
    assert detail["precision"] == pytest.approx(np.mean([p["correctness"] for p in detail["phrases"]]), abs=1e-4)
    assert detail["recall"] == pytest.approx(np.mean([r["completeness"] for r in detail["regions"]]), abs=1e-4)
    encoder = alpha_clip(BACKBONE, ALPHA)
    picture = Image.open(photo).convert("RGB")
    whole = encoder.encode_regions(picture, [np.ones((40, 60), dtype=bool)])[0]
    text = encoder.encode_texts([rows[0].candidate])[0]
    assert detail["global_itc"] == pytest.approx(2.5 * max(float(whole @ text), 0.0), abs=1e-5)

    ref = get("ref_hice_s").score(rows[:1])
    parts = ref.details[0]
    assert parts["global_ttc"] == pytest.approx(
        float((encoder.encode_texts(list(rows[0].references)) @ text).max()), abs=1e-5
    )
    assert ref.scores[0] == pytest.approx(
        harmonic_mean([parts["global_itc"], parts["local_itc"], parts["global_ttc"], parts["local_ttc"]])
    )
    assert parts["global_itc"] == pytest.approx(detail["global_itc"])


def test_regions_come_from_the_proposer_and_sam(vision_store, photo):
    from capbench_eval.backbones.segmenter import segmenter
    from capbench_eval.metrics.vision.hice import PROPOSER, SAM

    found = segmenter(PROPOSER, SAM, 0.0001).regions(Image.open(photo).convert("RGB"))
    assert len(found.masks) == len(found.boxes) and found.masks
    assert all(mask.shape == (40, 60) and mask.dtype == bool and mask.sum() >= 0.005 * 40 * 60 for mask in found.masks)
    assert len(found.masks) <= 32


def test_a_missing_alpha_clip_checkpoint_says_where_to_get_it(vision_store, photo):
    ALPHA.path.rename(ALPHA.path.with_suffix(".away"))
    try:
        from capbench_eval.backbones.alpha_clip import alpha_clip as cached

        cached.cache_clear()
        availability = get("hice_s").availability()
        assert not availability.available and "Alpha-CLIP model zoo" in availability.reason
        with pytest.raises(MetricUnavailable, match="clip_l14_grit20m_fultune_2xe.pth"):
            get("ref_hice_s").score([CaptionRow("1", "a dog", ("a dog",), photo)])
    finally:
        ALPHA.path.with_suffix(".away").rename(ALPHA.path)
