"""Pictures in the modes a dataset may hold (grey, RGBA, palette …) and captions a tokenizer finds
awkward, for the model metrics' oracles (embedding/ and vision/)."""

import numpy as np
import pytest


@pytest.fixture
def mode_pictures(tmp_path):
    """PNG files in order: RGB, grey (L), RGBA with a transparent band, palette (P), palette with a
    transparent colour, RGB again; 40×53 or 53×40, so that the resize and the crop both matter."""
    from PIL import Image

    rng = np.random.default_rng(5)
    colours = rng.integers(0, 255, (40, 53, 3), dtype=np.uint8)
    rgba = np.dstack([colours, rng.integers(0, 255, (40, 53), dtype=np.uint8)])
    rgba[:12, :, 3] = 0  # a transparent band over random colours
    rgba[30:, :20, 3] = 255
    palette = Image.fromarray(colours).quantize(24)
    transparent = palette.copy()
    transparent.info["transparency"] = 3
    made = {
        "rgb": Image.fromarray(colours),
        "grey": Image.fromarray(colours).convert("L"),
        "rgba": Image.fromarray(rgba, "RGBA"),
        "palette": palette,
        "palette-transparent": transparent,
        "rgb-2": Image.fromarray(rng.integers(0, 255, (53, 40, 3), dtype=np.uint8)),
    }
    paths = []
    for name, picture in made.items():
        path = tmp_path / f"{name}.png"
        picture.save(path)
        paths.append(str(path))
    with Image.open(paths[3]) as opened, Image.open(paths[2]) as rgba_opened:
        assert opened.mode == "P"
        assert rgba_opened.mode == "RGBA"  # saved in their own modes
    return paths


@pytest.fixture
def awkward_captions() -> list[str]:
    """One caption per picture of `mode_pictures`: plain, non-ASCII (accents, CJK, an emoji), over
    CLIP's 77 tokens, upper case with quotes, repeated words past the limit, two words."""
    return [
        "a dog runs on the grass",
        "Ein Hund läuft über die Straße, 犬が走っている — très vite 🐕",
        " ".join(["a long caption about a red bicycle leaning on a wall"] * 12),  # ≈ 130 tokens
        "ÇA VA? «un chat» sur le canapé",
        "two children sit on a bench " * 20,
        "a picture",
    ]
