"""CLIP-S, RefCLIP-S, PAC-S and RefPAC-S against the references' pipeline, written out here from the
CLIPScore and PAC-S code: the file given as opened to torchvision's Compose[Resize(bicubic),
CenterCrop, convert to RGB, ToTensor, Normalize], `clip.tokenize(prefix + text, truncate=True)`
(start token, the BPE of the cleaned lower-cased text, end token; over 77 tokens cut to 77 with the
end token last), the full 77-token text forward pooled at the end token, L2 normalisation,
w·max(cos, 0) and the harmonic mean with the raw best text–reference cosine. The same tiny random
weights on both sides; pictures in RGB, grey, RGBA (partly transparent), palette and palette with
a transparent colour (the `mode_pictures` fixture, conftest.py); captions over 77 tokens and outside
ASCII."""

import numpy as np
import pytest

from capbench_eval.metrics import CaptionRow
from capbench_eval.metrics.embedding.clip_score import PREFIX, ClipScore, PacScore, RefClipScore, RefPacScore

MEAN, STD = (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)  # CLIP's, in its transform
CONTEXT = 77
REFERENCES = [
    ("a dog on grass", "the cat sleeps on a sofa"),
    ("un chien court", "a dog runs in the street"),
    (" ".join(["a red bike against a brick wall"] * 15),),
    ("a cat on the sofa", "Ünïcödé wörds"),
    ("children on a bench", "people walk in the city " * 20),
    ("an image",),
]


def rows(paths, captions):
    return [
        CaptionRow(str(i), caption, refs, path)
        for i, (caption, refs, path) in enumerate(zip(captions, REFERENCES, paths, strict=True))
    ]


def reference_model(state):
    import open_clip

    model = open_clip.create_model("ViT-B-32-quickgelu", pretrained=None)
    model.load_state_dict(state)
    return model.float().eval()


def reference_images(model, paths, size):
    """The references' transform: Resize(size, bicubic) and CenterCrop on the picture as opened,
    then convert("RGB"), ToTensor, Normalize."""
    import torch
    from PIL import Image
    from torchvision.transforms import CenterCrop, Compose, InterpolationMode, Normalize, Resize, ToTensor

    transform = Compose(
        [
            Resize(size, interpolation=InterpolationMode.BICUBIC),
            CenterCrop(size),
            lambda picture: picture.convert("RGB"),
            ToTensor(),
            Normalize(MEAN, STD),
        ]
    )
    with torch.no_grad():
        return model.encode_image(torch.stack([transform(Image.open(path)) for path in paths])).numpy()


def reference_tokenize(texts):
    """clip.tokenize(texts, truncate=True) on the same BPE vocabulary."""
    import torch
    from open_clip.tokenizer import SimpleTokenizer

    bpe = SimpleTokenizer()
    start, end = bpe.encoder["<start_of_text>"], bpe.encoder["<end_of_text>"]
    result = torch.zeros(len(texts), CONTEXT, dtype=torch.long)
    for index, text in enumerate(texts):
        tokens = [start, *bpe.encode(text), end]
        if len(tokens) > CONTEXT:
            tokens = tokens[:CONTEXT]
            tokens[-1] = end
        result[index, : len(tokens)] = torch.tensor(tokens)
    return result


def reference_texts(model, texts):
    import torch

    with torch.no_grad():
        return model.encode_text(reference_tokenize(texts)).numpy()


def unit(rows):
    return rows / np.sqrt(np.sum(rows**2, axis=1, keepdims=True))


def reference_scores(state, paths, captions, size, w):
    """(CLIP-S, RefCLIP-S) per row as get_clip_score and get_refonlyclipscore compute them."""
    model = reference_model(state)
    images = unit(reference_images(model, paths, size))
    candidates = unit(reference_texts(model, [PREFIX + caption for caption in captions]))
    per = w * np.clip(np.sum(images * candidates, axis=1), 0, None)
    flattened = unit(reference_texts(model, [PREFIX + ref for refs in REFERENCES for ref in refs]))
    text_text, start = [], 0
    for candidate, refs in zip(candidates, REFERENCES, strict=True):
        text_text.append(np.max(candidate.dot(flattened[start : start + len(refs)].T)))
        start += len(refs)
    text_text = np.array(text_text)
    return per, 2 * per * text_text / (per + text_text)


def test_the_long_and_non_ascii_captions_are_what_the_test_says(awkward_captions):
    lengths = [int((row != 0).sum()) for row in reference_tokenize([PREFIX + caption for caption in awkward_captions])]
    assert lengths[2] == lengths[4] == CONTEXT
    assert lengths[0] < CONTEXT  # cut at 77
    assert any(ord(char) > 127 for char in awkward_captions[1])


def test_clip_s_and_refclip_s_equal_the_reference_pipeline_on_every_picture_mode(
    model_store, mode_pictures, awkward_captions
):
    import torch

    from tests.fixtures.models import TINY_CLIP

    state = torch.load(model_store / "open_clip" / "ViT-B-32-quickgelu" / "openai.pt", weights_only=True)
    clip_s, ref_clip_s = reference_scores(
        state, mode_pictures, awkward_captions, TINY_CLIP["vision_cfg"]["image_size"], 2.5
    )
    assert ClipScore().score(rows(mode_pictures, awkward_captions)).scores == pytest.approx(clip_s.tolist(), abs=1e-5)
    assert RefClipScore().score(rows(mode_pictures, awkward_captions)).scores == pytest.approx(
        ref_clip_s.tolist(), abs=1e-5
    )


def test_pac_s_and_refpac_s_equal_the_reference_pipeline_on_every_picture_mode(
    model_store, pac_checkpoint, mode_pictures, awkward_captions
):
    import torch

    from tests.fixtures.models import TINY_CLIP

    state = torch.load(pac_checkpoint, weights_only=True)["state_dict"]
    pac_s, ref_pac_s = reference_scores(
        state, mode_pictures, awkward_captions, TINY_CLIP["vision_cfg"]["image_size"], 2.0
    )
    assert PacScore().score(rows(mode_pictures, awkward_captions)).scores == pytest.approx(pac_s.tolist(), abs=1e-5)
    assert RefPacScore().score(rows(mode_pictures, awkward_captions)).scores == pytest.approx(
        ref_pac_s.tolist(), abs=1e-5
    )


def test_converting_on_opening_would_differ_for_transparency_and_palettes(model_store, mode_pictures):
    """What the fix is about: RGB_ON_OPENING (Polos's order) gives other features for the RGBA and
    palette mode_pictures, the same for RGB and grey ones; and the two orders are cached apart."""
    from capbench_eval.backbones.clip import RGB_AFTER_CROP, RGB_ON_OPENING

    encoder = ClipScore().encoder
    after = encoder.encode_images(mode_pictures, cache=encoder.feature_cache(RGB_AFTER_CROP), rgb=RGB_AFTER_CROP)
    first = encoder.encode_images(mode_pictures, cache=encoder.feature_cache(RGB_ON_OPENING), rgb=RGB_ON_OPENING)
    difference = np.abs(after - first).max(axis=1)
    assert difference[[0, 1, 5]] == pytest.approx([0, 0, 0], abs=1e-6)  # RGB, grey
    assert min(difference[[2, 3, 4]]) > 1e-3  # RGBA, palette, palette with a transparent colour
    assert encoder.images_encoded == 2 * len(mode_pictures)  # the second order did not read the first's cache
    assert encoder.feature_cache(RGB_AFTER_CROP).folder != encoder.feature_cache(RGB_ON_OPENING).folder
    with pytest.raises(ValueError, match="cannot serve"):
        encoder.encode_images(mode_pictures, cache=encoder.feature_cache(RGB_ON_OPENING), rgb=RGB_AFTER_CROP)
    with pytest.raises(ValueError, match="unknown RGB conversion order"):
        encoder.encode_images(mode_pictures, rgb="rgb-sometimes")


def test_the_conversion_order_is_in_the_configuration(model_store):
    assert ClipScore().config()["rgb"] == "rgb-after-crop" == RefPacScore().config()["rgb"]
