"""HICE-S and RefHICE-S against the formulas of the paper as metrics.md §10 writes them, computed
here apart from CapBench's code on the same tiny random models (the vision_store fixture, its
Alpha-CLIP towers given a shared direction so that the cosines are positive: `aligned_store`):

    gITC = s(C_v(I, whole), C_t(C));  f_I,n = C_v(I, A_n);  f_C,m = C_t(phrase m)
    P = mean_m max_n s(f_I,n, f_C,m);  R = mean_n max_m s(·);  lITC = hMean(P, R)
    HICE-S = hMean(gITC, lITC);  RefHICE-S = hMean(gITC, lITC, gTTC, lTTC)
    hMean(x_1..x_k) = k / Σ 1/x_i, and 0 if any x_i ≤ 0

with §10's stated choices: s = 2.5·max(cos, 0) for image–text pairs, raw cosines for text–text
(gTTC the best over the references, lTTC the same P/R/hMean over the candidate's phrases and the
deduplicated union of the references'), a triplet read as "subject predicate object", no triplet →
the caption is the one phrase, no region → the whole picture is the one region.

The encoder is rebuilt here as Alpha-CLIP is described (a 4-channel patch embedding: the RGB
convolution and the alpha convolution side by side, fed RGB and the normalised mask together), with
the picture opened and converted to RGB (as Alpha-CLIP's README opens it), picture and mask
centre-cropped together and resized, the mask normalised with mean 0.5 and std 0.26, and captions
tokenised as `clip.tokenize(truncate=True)` does (77 tokens, the end token last). Regions (the
proposer and SAM) and triplets (FACTUAL, or a stand-in parser that yields many phrases) are inputs
to the formula: they are taken from the same components and given to both sides; the masks are
resized bilinearly (§10 does not say how; this is CapBench's choice).

Pictures in RGB, grey, RGBA, palette and palette with a transparent colour (`mode_pictures`,
tests/evaluation/metrics/conftest.py); captions over 77 tokens and outside ASCII."""

import re

import numpy as np
import pytest
from PIL import Image

from capbench_eval.metrics import CaptionRow, get

W = 2.5
MEAN, STD = (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)
CONTEXT = 77
K = 5.0  # the shared direction's weight (aligned_store)
CAPTIONS = [
    "a dog runs on the grass. the dog is brown.",
    "Ein Hund läuft über die Straße. 犬が 走って いる — très vite 🐕",
    " ".join(["a long caption about a red bicycle leaning on a wall"] * 12),  # ≈ 130 tokens
    "ÇA VA? «un chat» sur le canapé",
    "two children sit on a bench " * 20,
    "a picture",  # two words: no triplet from the stand-in parser, the caption is the one phrase
]
REFERENCES = [
    ("a dog on grass", "the cat sleeps on a sofa"),
    ("un chien court vite", "a dog runs in the street"),
    (" ".join(["a red bike against a brick wall"] * 15),),
    ("a cat on the sofa", "Ünïcödé wörds"),
    ("children on a bench", "people walk in the city " * 20),
    ("an image",),
]


# ---------------------------------------------------------------------------------------------------
# The formula, as published (metrics.md §10).


def h_mean(values):
    """k / Σ 1/x_i; 0 when any x_i ≤ 0."""
    return 0.0 if min(values) <= 0 else len(values) / sum(1.0 / v for v in values)


def s(cos):
    """The image–text similarity, rescaled as CLIP-S: 2.5·max(cos, 0)."""
    return W * np.maximum(cos, 0.0)


def precision_recall(similarity):
    """similarity[m, n]: P = mean over the rows (phrases) of their maximum, R = mean over the columns."""
    return float(np.mean(similarity.max(axis=1))), float(np.mean(similarity.max(axis=0)))


def phrase_text(triplet):
    return " ".join(triplet)


def reference_hice(encoder, picture_path, regions, caption, triplets, references=None, reference_triplets=None):
    """(score, parts) for one caption. `regions`: the region masks; `triplets`: the caption's;
    `reference_triplets`: one list per reference (RefHICE-S) or None (HICE-S)."""
    height, width = np.asarray(Image.open(picture_path)).shape[:2]
    whole = np.ones((height, width), dtype=bool)
    features = encoder.images(picture_path, [whole, *regions])
    phrases = [phrase_text(t) for t in triplets] or [caption]
    text = encoder.texts([caption])[0]
    phrase_features = encoder.texts(phrases)
    region_features = features[1:] if regions else features[:1]  # no region: the whole picture
    g_itc = float(s(features[0] @ text))
    p, r = precision_recall(s(phrase_features @ region_features.T))
    l_itc = h_mean([p, r])
    parts = {"global_itc": g_itc, "local_itc": l_itc, "precision": p, "recall": r}
    if references is None:
        return h_mean([g_itc, l_itc]), parts
    g_ttc = float(np.max(encoder.texts(list(references)) @ text))  # raw cosine, best reference
    union = list(dict.fromkeys(phrase_text(t) for ref in reference_triplets for t in ref)) or list(references)
    p_t, r_t = precision_recall(phrase_features @ encoder.texts(union).T)  # raw cosines
    l_ttc = h_mean([p_t, r_t])
    parts.update(global_ttc=g_ttc, local_ttc=l_ttc, reference_phrases=union)
    return h_mean([g_itc, l_itc, g_ttc, l_ttc]), parts


# ---------------------------------------------------------------------------------------------------
# Alpha-CLIP as described, built here from the store's files.


class ReferenceAlphaClip:
    def __init__(self, store):
        import open_clip
        import torch

        base = torch.load(store / "open_clip" / "ViT-L-14-quickgelu" / "openai.pt", weights_only=True)
        model = open_clip.create_model("ViT-L-14-quickgelu", pretrained=None)
        model.load_state_dict(base)
        shipped = torch.load(
            store / "checkpoints" / "alpha_clip" / "clip_l14_grit20m_fultune_2xe.pth", weights_only=True
        )
        # The authors' attention keeps its qkv projection as a Linear (in_proj.weight/.bias).
        visual = {re.sub(r"attn\.in_proj\.(weight|bias)$", r"attn.in_proj_\1", key): v for key, v in shipped.items()}
        alpha_weight = visual.pop("conv1_alpha.weight")
        model.visual.load_state_dict(visual)
        rgb_conv = model.visual.conv1
        joined = torch.nn.Conv2d(4, rgb_conv.out_channels, rgb_conv.kernel_size, rgb_conv.stride, bias=False)
        with torch.no_grad():
            joined.weight.copy_(torch.cat([rgb_conv.weight, alpha_weight], dim=1))
        model.visual.conv1 = joined  # RGB and alpha through one patch embedding
        self.model = model.float().eval()
        self.size = int(model.visual.image_size[0])

    def images(self, path, masks):
        import torch
        from torchvision.transforms import InterpolationMode
        from torchvision.transforms import functional as tf

        picture = Image.open(path).convert("RGB")
        side = min(picture.size)
        rgb = tf.resize(tf.center_crop(picture, [side, side]), [self.size, self.size], InterpolationMode.BICUBIC)
        rgb = tf.normalize(tf.to_tensor(rgb), MEAN, STD)
        inputs = []
        for mask in masks:
            alpha = Image.fromarray(mask.astype(np.uint8) * 255)
            alpha = tf.resize(tf.center_crop(alpha, [side, side]), [self.size, self.size], InterpolationMode.BILINEAR)
            inputs.append(torch.cat([rgb, tf.normalize(tf.to_tensor(alpha), [0.5], [0.26])]))
        with torch.no_grad():
            features = self.model.visual(torch.stack(inputs))
        return torch.nn.functional.normalize(features, dim=-1).numpy()

    def texts(self, texts):
        import torch
        from open_clip.tokenizer import SimpleTokenizer

        bpe = SimpleTokenizer()
        start, end = bpe.encoder["<start_of_text>"], bpe.encoder["<end_of_text>"]
        tokens = torch.zeros(len(texts), CONTEXT, dtype=torch.long)
        for row, text in enumerate(texts):
            ids = [start, *bpe.encode(text), end]
            if len(ids) > CONTEXT:
                ids = [*ids[: CONTEXT - 1], end]
            tokens[row, : len(ids)] = torch.tensor(ids)
        with torch.no_grad():
            return torch.nn.functional.normalize(self.model.encode_text(tokens), dim=-1).numpy()


# ---------------------------------------------------------------------------------------------------
# The triplets: a stand-in parser that yields several phrases per caption (three words a triplet,
# a lone word as an entity, each sentence apart, each triplet once), or the tiny FACTUAL itself.


def stand_in_triplets(text):
    found = []
    for sentence in text.split(". "):
        words = sentence.split()
        chunks = [tuple(words[i : i + 3]) for i in range(0, len(words), 3)]
        found.extend(c for c in chunks if len(c) in (1, 3) and c not in found)
    return found


class SharedRegions:
    """The segmenter, each picture's regions found once and given to CapBench and the formula alike."""

    def __init__(self, inner):
        self.inner, self.found = inner, {}

    def regions(self, picture):
        key = (picture.size, picture.tobytes())
        if key not in self.found:
            self.found[key] = self.inner.regions(picture)
        return self.found[key]

    def __getattr__(self, name):
        return getattr(self.inner, name)


class StandInParser:
    def parse(self, texts):
        return [stand_in_triplets(text) for text in texts]

    def unavailable_reason(self):
        return None

    def fingerprint(self):
        return "stand-in"


@pytest.fixture
def aligned_store(vision_store, tmp_path, monkeypatch):
    """The vision store with Alpha-CLIP's towers given a shared direction: each tower's final layer
    norm gets a bias of K on its first channel, and both projections map that channel onto one unit
    vector u. With random weights most image–text cosines are negative, so s = 2.5·max(cos, 0) is 0
    and every harmonic mean 0; shifted so, the cosines spread over about 0.1–0.9 and each term of
    the formula carries a value. Everything else is the vision store's own files (linked)."""
    import os
    import shutil

    import torch

    from capbench_eval.backbones.alpha_clip import alpha_clip

    store = tmp_path / "aligned-models"
    shutil.copytree(vision_store, store, copy_function=os.symlink)
    u = torch.nn.functional.normalize(torch.ones(32), dim=0)
    base = store / "open_clip" / "ViT-L-14-quickgelu" / "openai.pt"
    state = torch.load(base, weights_only=True)
    state["ln_final.bias"][0], state["text_projection"][0] = K, u
    base.unlink()
    torch.save(state, base)
    shipped = store / "checkpoints" / "alpha_clip" / "clip_l14_grit20m_fultune_2xe.pth"
    visual = torch.load(shipped, weights_only=True)
    visual["ln_post.bias"][0], visual["proj"][0] = K, u
    shipped.unlink()
    torch.save(visual, shipped)
    monkeypatch.setenv("CAPBENCH_MODEL_DIR", str(store))
    alpha_clip.cache_clear()
    yield store
    alpha_clip.cache_clear()


def rows(paths):
    return [
        CaptionRow(str(i), caption, refs, path)
        for i, (caption, refs, path) in enumerate(zip(CAPTIONS, REFERENCES, paths, strict=True))
    ]


def test_the_captions_are_what_the_test_says():
    from open_clip.tokenizer import SimpleTokenizer

    lengths = [len(SimpleTokenizer().encode(caption)) + 2 for caption in CAPTIONS]
    assert lengths[2] > CONTEXT
    assert lengths[4] > CONTEXT
    assert lengths[0] < CONTEXT
    assert any(ord(char) > 127 for char in CAPTIONS[1] + CAPTIONS[3])
    assert len(stand_in_triplets(CAPTIONS[0])) == 4
    assert stand_in_triplets(CAPTIONS[5]) == []
    assert len(stand_in_triplets(CAPTIONS[4])) == 2  # repeated triplets once


@pytest.mark.parametrize(
    ("parser", "proposer_confidence", "picked"),
    [("stand-in", "0.0001", range(6)), ("factual", "0.0001", [1, 2]), ("stand-in", "0.9999", [2, 3])],
    ids=["many-phrases-many-regions", "factual-phrases", "no-region"],
)
@pytest.mark.slow  # over 5 s of CPU (issue 40)
def test_hice_s_and_refhice_s_equal_the_published_formula(
    aligned_store, mode_pictures, monkeypatch, parser, proposer_confidence, picked
):
    from capbench_eval.backbones.scene_graph import scene_graph_parser
    from capbench_eval.backbones.segmenter import segmenter
    from capbench_eval.metrics.vision import hice
    from capbench_eval.metrics.vision.hice import FACTUAL, PROPOSER, SAM

    monkeypatch.setenv("CAPBENCH_HICE_PROPOSER_CONF", proposer_confidence)
    regions = SharedRegions(segmenter(PROPOSER, SAM, float(proposer_confidence)))
    monkeypatch.setattr(hice, "segmenter", lambda proposer, sam, confidence: regions)
    if parser == "stand-in":
        monkeypatch.setattr(hice, "scene_graph_parser", lambda model: StandInParser())
        triplets_of = StandInParser().parse
    else:
        triplets_of = scene_graph_parser(FACTUAL).parse
    captions = [rows(mode_pictures)[i] for i in picked]
    ours = get("hice_s").score(captions)
    ours_ref = get("ref_hice_s").score(captions)

    encoder = ReferenceAlphaClip(aligned_store)
    for index, row in enumerate(captions):
        found = regions.regions(Image.open(row.media).convert("RGB"))
        triplets = triplets_of([row.candidate])[0]
        expected, parts = reference_hice(encoder, row.media, found.masks, row.candidate, triplets)
        expected_ref, ref_parts = reference_hice(
            encoder, row.media, found.masks, row.candidate, triplets, row.references, triplets_of(list(row.references))
        )
        detail, ref_detail = ours.details[index], ours_ref.details[index]
        assert [p["text"] for p in detail["phrases"]] == ([phrase_text(t) for t in triplets] or [row.candidate])
        assert [r["box"] for r in detail["regions"]] == (found.boxes or [None])
        assert ref_detail["reference_phrases"] == ref_parts["reference_phrases"]
        for name, value in parts.items():
            assert detail[name] == pytest.approx(value, abs=1e-5), (index, name)
        for name in ("global_ttc", "local_ttc"):
            assert ref_detail[name] == pytest.approx(ref_parts[name], abs=1e-5), (index, name)
        assert ours.scores[index] == pytest.approx(expected, abs=1e-5), index
        assert ours_ref.scores[index] == pytest.approx(expected_ref, abs=1e-5), index
    if proposer_confidence == "0.9999":
        assert all(len(d["regions"]) == 1 and d["regions"][0]["box"] is None for d in ours.details)
    else:
        assert all(len(d["regions"]) > 1 for d in ours.details)  # several regions on every picture
    if parser == "stand-in":
        with_triplets = [d for row, d in zip(captions, ours.details, strict=True) if stand_in_triplets(row.candidate)]
        assert all(len(d["phrases"]) > 1 for d in with_triplets)  # several phrases each
    assert min(ours.scores) > 0
    assert min(ours_ref.scores) > 0  # every term carried a value (aligned_store)


def test_the_harmonic_mean_is_zero_when_a_part_is_not_positive():
    """The paper's hMean with §10's rule: RefHICE-S is 0 as soon as a raw text–text cosine is ≤ 0."""
    from capbench_eval.metrics.vision.levels import harmonic_mean

    rng = np.random.default_rng(0)
    for _ in range(200):
        values = list(rng.uniform(-0.5, 2.5, size=rng.integers(2, 5)))
        assert harmonic_mean(values) == pytest.approx(h_mean(values), abs=1e-12)
    assert harmonic_mean([0.5, 0.0, 1.0, 1.0]) == 0.0 == h_mean([0.5, 0.0, 1.0, 1.0])
