"""G-VEval's view of a video (metrics.md §13): three frames at indices linspace(0, N−1, 4)[:-1]
(0, ⌊(N−1)/3⌋, ⌊2(N−1)/3⌋, not first/middle/last as the paper says), each resized to 512×462
(aspect not kept) above a 50-px white bar labelled "Frame k" in black, side by side: 1536×512."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from PIL import Image

PANEL_WIDTH, PANEL_HEIGHT, BAR = 512, 462, 50
VIDEO_SUFFIXES = {".mp4", ".avi", ".mov", ".mkv", ".webm", ".m4v", ".mpg", ".mpeg"}


def is_video(path: str | Path) -> bool:
    return Path(path).suffix.lower() in VIDEO_SUFFIXES


def frame_indices(count: int) -> list[int]:
    if count < 1:
        raise ValueError("the video has no frames")
    return [int(i) for i in np.linspace(0, count - 1, 4, dtype=int)[:-1]]


def read_frames(path: str | Path) -> list[Image.Image]:
    """Every frame of the first video stream, decoded with PyAV, as RGB PIL images."""
    import av  # here, not at the top: importing the metrics must not load PyAV (only videos need it)

    with av.open(str(path)) as container:
        return [frame.to_image() for frame in container.decode(video=0)]


def composite(frames: Sequence[Image.Image]) -> Image.Image:
    """The labelled 3-panel image from a list of PIL frames."""
    from PIL import Image, ImageDraw, ImageFont  # here: importing the library must not need Pillow

    chosen = [frames[i] for i in frame_indices(len(frames))]
    canvas = Image.new("RGB", (3 * PANEL_WIDTH, PANEL_HEIGHT + BAR), "white")
    try:
        font = ImageFont.load_default(size=32)
    except TypeError:  # Pillow < 10.1
        font = ImageFont.load_default()
    draw = ImageDraw.Draw(canvas)
    for k, frame in enumerate(chosen):
        canvas.paste(frame.convert("RGB").resize((PANEL_WIDTH, PANEL_HEIGHT)), (k * PANEL_WIDTH, 0))
        draw.text((k * PANEL_WIDTH + 10, PANEL_HEIGHT + 8), f"Frame {k + 1}", fill="black", font=font)
    return canvas


def video_composite_png(path: str | Path) -> bytes:
    buffer = io.BytesIO()
    composite(read_frames(path)).save(buffer, format="PNG")
    return buffer.getvalue()
