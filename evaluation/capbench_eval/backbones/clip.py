"""A CLIP model loaded by its real open_clip name from the local store, encoding images and texts
in batches (halved on out-of-memory), one instance per process and configuration. Features come
back L2-normalised (CLIP-S, PAC-S) or raw (Polos feeds the unnormalised projections to its head);
the image feature cache keeps the raw ones, so both forms come from one cache. When a picture becomes
RGB is the caller's choice (`RGB_AFTER_CROP` for CLIP-S and PAC-S, `RGB_ON_OPENING` for Polos, as
their references do) and part of the cache's key: the two orders give different pixels for a
picture with transparency or a palette, so they never share a cached feature.

torch and open_clip are imported inside the functions that use them: importing the metrics must not
load them (a CPU web process never needs them)."""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from capbench_eval.backbones.catalogue import Checkpoint, OpenClipModel, file_sha256
from capbench_eval.backbones.device import best_device
from capbench_eval.backbones.features import FeatureCache, media_sha256
from capbench_eval.backbones.lazy import LazyModel, in_use

PREPROCESSING_VERSION = "open_clip-val-transform-raw-2"
# When a picture is converted to RGB (metrics.md §6–8). The CLIPScore and PAC-S references give the
# file as opened to their transform, whose own step after Resize and CenterCrop converts it (as
# open_clip's validation transform does: Resize, CenterCrop, convert to RGB, ToTensor, Normalize);
# Polos's reference converts on opening. PIL resizes RGBA premultiplied by alpha (so fully
# transparent pixels come out black) and a palette picture with NEAREST whatever was asked, so the
# two orders differ for those; for RGB and grey pictures they agree.
RGB_AFTER_CROP = "rgb-after-crop"
RGB_ON_OPENING = "rgb-on-opening"
RGB_ORDERS = (RGB_AFTER_CROP, RGB_ON_OPENING)
# Texts whose raw features (and token rows) a process keeps, least recently used dropped first:
# ≈ 2 KiB of features (ViT-B/32) and 0.6 KiB of tokens each, so ≈ 260 MiB at most per encoder.
TEXT_MEMO_SIZE = 100_000


class Memo:
    """A bounded mapping that forgets its least recently used entries; safe across threads."""

    def __init__(self, size: int):
        self.size, self.hits, self.misses = size, 0, 0
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def take(self, keys: Sequence) -> dict:
        """The remembered values of those keys that are here (each marked as just used)."""
        found = {}
        with self._lock:
            for key in keys:
                if key in self._items:
                    self._items.move_to_end(key)
                    found[key] = self._items[key]
            self.hits += len(found)
            self.misses += len(keys) - len(found)
        return found

    def keep(self, items: dict) -> None:
        with self._lock:
            for key, value in items.items():
                self._items[key] = value
                self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


@functools.cache
def token_memo(architecture: str) -> Memo:
    """Token rows per text for one open_clip architecture, whose name alone decides its tokenizer
    (`open_clip.get_tokenizer(architecture)`): shared by every encoder of it (CLIP-S and PAC-S
    tokenise the same captions and references)."""
    return Memo(TEXT_MEMO_SIZE)


class ClipEncoder(LazyModel):
    def __init__(
        self,
        model: OpenClipModel,
        checkpoint: Checkpoint | None = None,
        *,
        fp16_on_cuda: bool = True,
        image_batch: int = 64,
        text_batch: int = 256,
    ):
        self.spec, self.checkpoint = model, checkpoint
        self.device = best_device()
        # CLIP-S's reference keeps fp16 weights on CUDA; PAC-S calls model.float(). CPU is fp32 always.
        self.precision = "fp16" if self.device == "cuda" and fp16_on_cuda else "fp32"
        self.image_batch, self.text_batch = image_batch, text_batch
        super().__init__()
        self.images_encoded = self.texts_encoded = 0
        self.text_memo = Memo(TEXT_MEMO_SIZE)

    def unavailable_reason(self) -> str | None:
        if self.spec.weights() is None:
            return self.spec.missing()
        if self.checkpoint is not None and not self.checkpoint.path.is_file():
            return self.checkpoint.missing()
        return None

    def fingerprint(self) -> str:
        """The weights that produce the numbers (backbone, then fine-tuned checkpoint)."""
        weights = self.spec.weights()
        parts = [self.spec.name, file_sha256(weights)[:16] if weights else "absent"]
        if self.checkpoint is not None:
            parts.append(file_sha256(self.checkpoint.path)[:16] if self.checkpoint.path.is_file() else "absent")
        return "/".join(parts)

    def build(self):
        self.require_available()
        import open_clip
        import torch

        self.text_memo = Memo(TEXT_MEMO_SIZE)  # built again: the store's weights may have changed

        override = self.spec.config_override()
        if override is not None:
            open_clip.add_model_config(override)
        model, _, preprocess = open_clip.create_model_and_transforms(
            self.spec.architecture, pretrained=str(self.spec.weights()), device=self.device, precision=self.precision
        )
        if self.checkpoint is not None:
            state = torch.load(self.checkpoint.path, map_location="cpu", weights_only=True)
            model.load_state_dict(state.get("state_dict", state))
            if self.precision == "fp32":
                model = model.float()
        model.eval()
        return (model, preprocess, open_clip.get_tokenizer(self.spec.architecture))

    def model(self):
        """The loaded open_clip model (for checks against a checkpoint's copy of it)."""
        return self._load()[0]

    @in_use
    def encode_texts(self, texts: Sequence[str], normalise: bool = True) -> np.ndarray:
        """One row per text (L2-normalised unless `normalise=False`). Each distinct text is encoded
        once per process: the features stay in memory (`text_memo`, least recently used dropped
        first), so RefCLIP-S reuses the candidates CLIP-S encoded and a second submission on the
        same dataset encodes only its own captions."""
        model, _, tokenizer = self._load()
        distinct = list(dict.fromkeys(texts))
        if not distinct:
            return np.zeros((0, 0), dtype=np.float32)
        found = self.text_memo.take(distinct)
        todo = [text for text in distinct if text not in found]
        if todo:
            tokens = self.tokens(todo, tokenizer)
            # Batches of similar length, each cut after its longest text: far less padding to encode.
            order = sorted(range(len(todo)), key=lambda i: int(tokens[i].argmax()))
            encoded = self._batched(
                order, "text_batch", lambda part: encode_text_trimmed(model, tokens[part].to(self.device))
            )
            # Copies: a kept row must not hold the whole batch's array alive after the others are dropped.
            fresh = {todo[i]: row.copy() for i, row in zip(order, encoded, strict=True)}
            self.text_memo.keep(fresh)
            self.texts_encoded += len(todo)
            found.update(fresh)
        rows = np.stack([found[text] for text in texts])
        return unit_rows(rows) if normalise else rows

    def tokens(self, texts: list[str], tokenizer):
        """The tokenizer's rows for distinct texts, from the architecture's token memo where seen."""
        import torch

        memo = token_memo(self.spec.architecture)
        found = memo.take(texts)
        todo = [text for text in texts if text not in found]
        if todo:
            fresh = dict(zip(todo, tokenizer(todo).clone().unbind(0), strict=True))
            memo.keep(fresh)
            found.update(fresh)
        return torch.stack([found[text] for text in texts])

    @in_use
    def encode_images(
        self,
        paths: Sequence[str],
        cache: FeatureCache | None = None,
        normalise: bool = True,
        rgb: str = RGB_ON_OPENING,
    ) -> np.ndarray:
        """One row per image path (L2-normalised unless `normalise=False`), from the feature cache
        where the same content was seen before. `rgb`: when the picture is converted to RGB
        (RGB_ON_OPENING or RGB_AFTER_CROP); a cache from `feature_cache` must be of the same order."""
        check_rgb(rgb)
        if isinstance(cache, ClipFeatureCache) and cache.rgb != rgb:
            raise ValueError(f"a feature cache of {cache.rgb} pictures cannot serve {rgb} ones")
        model, preprocess, _ = self._load()
        shas = [media_sha256(path) for path in paths]
        found: dict[str, np.ndarray] = {}
        for sha in dict.fromkeys(shas):
            vector = cache.get(sha) if cache is not None else None
            if vector is not None:
                found[sha] = vector
        todo = [(sha, path) for sha, path in dict(zip(shas, paths, strict=True)).items() if sha not in found]
        if todo:

            def encode(part):
                import torch

                pixels = torch.stack(prepared([p for _, p in part], preprocess, rgb))
                dtype = torch.float16 if self.precision == "fp16" else torch.float32
                return model.encode_image(pixels.to(self.device, dtype=dtype))

            vectors = self._batched(todo, "image_batch", encode)
            self.images_encoded += len(todo)
            for (sha, _), vector in zip(todo, vectors, strict=True):
                found[sha] = vector
                if cache is not None:
                    cache.put(sha, vector)
        if not shas:
            return np.zeros((0, 0), dtype=np.float32)
        rows = np.stack([found[sha] for sha in shas])
        return unit_rows(rows) if normalise else rows

    @in_use
    def encode_pictures(self, pictures: Sequence, normalise: bool = True) -> np.ndarray:
        """One row per PIL picture (crops, generated pictures held in memory); not cached."""
        model, preprocess, _ = self._load()
        if not pictures:
            return np.zeros((0, 0), dtype=np.float32)

        def encode(part):
            import torch

            pixels = torch.stack([preprocess(picture.convert("RGB")) for picture in part])
            dtype = torch.float16 if self.precision == "fp16" else torch.float32
            return model.encode_image(pixels.to(self.device, dtype=dtype))

        rows = self._batched(list(pictures), "image_batch", encode)
        self.images_encoded += len(pictures)
        return unit_rows(rows) if normalise else rows

    def _batched(self, items: list, size_attribute: str, encode) -> np.ndarray:
        """Encode in batches of `getattr(self, size_attribute)` (raw float32 features); on CUDA
        out-of-memory, halve the batch (from the part that failed), keep the smaller size for later
        calls, and go on."""
        import torch

        out, start = [], 0
        while start < len(items):
            part = items[start : start + getattr(self, size_attribute)]
            try:
                with torch.no_grad():
                    features = encode(part).float()
            except torch.OutOfMemoryError:
                if len(part) == 1:
                    raise
                torch.cuda.empty_cache()
                setattr(self, size_attribute, max(1, len(part) // 2))
                continue
            out.append(features.cpu().numpy())
            start += len(part)
        return np.concatenate(out) if out else np.zeros((0, 0), dtype=np.float32)

    def feature_cache(self, rgb: str = RGB_ON_OPENING) -> ClipFeatureCache:
        """The on-disk image features of these weights, precision and RGB conversion order."""
        check_rgb(rgb)
        key = "_".join([self.fingerprint().replace("/", "_"), PREPROCESSING_VERSION, self.precision, rgb])
        return ClipFeatureCache(key, rgb)


class ClipFeatureCache(FeatureCache):
    """A feature cache that knows which RGB conversion order its features were computed with."""

    def __init__(self, model_key: str, rgb: str):
        super().__init__(model_key)
        self.rgb = rgb


def check_rgb(rgb: str) -> None:
    if rgb not in RGB_ORDERS:
        raise ValueError(f"unknown RGB conversion order {rgb!r}; one of {', '.join(RGB_ORDERS)}")


@functools.cache
def _decoders() -> ThreadPoolExecutor:
    """Threads that decode and resize a batch's images: PIL and torch release the GIL there, so a
    batch is prepared on several cores while the GPU waits less (on an H100, one core decoding
    500×375 JPEGs for ViT-B/32 left the GPU idle most of the time: docs/performance.md)."""
    return ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1), thread_name_prefix="clip-decode")


# A forked child does not inherit the parent's threads: it makes its own pool on first use.
os.register_at_fork(after_in_child=_decoders.cache_clear)


def prepared(paths: Sequence[str], preprocess, rgb: str = RGB_ON_OPENING) -> list:
    """The model's input tensor for each image file, in order. RGB_ON_OPENING converts the file to
    RGB before `preprocess`; RGB_AFTER_CROP gives it in its own mode (RGBA, P, L …), and open_clip's
    transform converts it after its resize and crop."""
    check_rgb(rgb)
    from PIL import Image  # here: importing the library must not need Pillow

    def one(path: str):
        with Image.open(path) as image:
            return preprocess(image.convert("RGB") if rgb == RGB_ON_OPENING else image)

    return list(_decoders().map(one, paths))


def encode_text_trimmed(model, tokens):
    """open_clip's `encode_text` on tokens cut after the batch's last end-of-text token. For CLIP's
    causal text transformer pooled at end-of-text, padding after it cannot change the output; the
    77-token padding otherwise costs several times the work on short captions. Other text towers
    go through `encode_text` unchanged."""
    import torch

    causal = getattr(model, "attn_mask", None) is not None and getattr(model, "text_pool_type", "") == "argmax"
    if not causal or not hasattr(model, "token_embedding"):
        return model.encode_text(tokens)
    length = int(tokens.argmax(dim=-1).max()) + 1
    tokens = tokens[:, :length]
    cast = model.transformer.get_cast_dtype()
    x = model.token_embedding(tokens).to(cast) + model.positional_embedding[:length].to(cast)
    x = model.ln_final(model.transformer(x, attn_mask=model.attn_mask[:length, :length]))
    x = x[torch.arange(x.shape[0], device=x.device), tokens.argmax(dim=-1)]
    if isinstance(model.text_projection, torch.nn.Linear):
        return model.text_projection(x)
    return x @ model.text_projection if model.text_projection is not None else x


def unit_rows(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@functools.lru_cache(maxsize=8)
def _clip_encoder(model: OpenClipModel, checkpoint: Checkpoint | None, fp16_on_cuda: bool) -> ClipEncoder:
    return ClipEncoder(model, checkpoint, fp16_on_cuda=fp16_on_cuda)


class _Encoders:
    """`clip_encoder(model, checkpoint=None, fp16_on_cuda=True)`: one encoder per process and
    configuration (models load once per worker), the same one however the arguments are written
    (Polos's `clip_encoder(m)` is CLIP-S's `clip_encoder(m, None, True)`)."""

    def __call__(
        self, model: OpenClipModel, checkpoint: Checkpoint | None = None, fp16_on_cuda: bool = True
    ) -> ClipEncoder:
        return _clip_encoder(model, checkpoint, fp16_on_cuda)

    def cache_clear(self) -> None:
        _clip_encoder.cache_clear()


clip_encoder = _Encoders()
