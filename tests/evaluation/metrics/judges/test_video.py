"""The G-VEval video composite: which frames, and the geometry of the picture."""

import numpy as np
import pytest
from PIL import Image

from capbench_eval.metrics.judges.video import composite, frame_indices, read_frames, video_composite_png


def test_frame_indices_are_the_first_three_of_four_evenly_spaced():
    assert frame_indices(10) == [0, 3, 6]
    assert frame_indices(100) == [0, 33, 66]
    assert frame_indices(1) == [0, 0, 0]
    with pytest.raises(ValueError):
        frame_indices(0)


def test_composite_is_three_stretched_panels_over_white_labelled_bars():
    colours = [(200, 0, 0), (0, 200, 0), (0, 0, 200), (9, 9, 9)] * 3
    frames = [Image.new("RGB", (320, 240), c) for c in colours[:10]]
    picture = np.asarray(composite(frames))
    assert picture.shape == (512, 1536, 3)
    # frames 0, 3, 6 → red, gray(9), blue; each panel 512 wide, 462 high, aspect not kept
    assert tuple(picture[200, 100]) == (200, 0, 0)
    assert tuple(picture[200, 512 + 100]) == (9, 9, 9)
    assert tuple(picture[200, 1024 + 100]) == (0, 0, 200)
    bar = picture[462:, :]
    assert (bar == 255).mean() > 0.8
    assert (bar < 100).any()  # white with dark label text


def test_a_real_video_file_is_decoded_and_composited(tmp_path):
    import av

    path = tmp_path / "clip.mp4"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for index in range(9):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), index * 25, dtype=np.uint8), format="rgb24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    frames = read_frames(path)
    assert len(frames) == 9
    png = video_composite_png(path)
    picture = np.asarray(Image.open(__import__("io").BytesIO(png)))
    assert picture.shape == (512, 1536, 3)
    # frames 0, 2, 5 (linspace(0, 8, 4) = 0, 2.67, 5.33): brightness rises left to right
    left, middle, right = (int(picture[200, x].mean()) for x in (100, 612, 1124))
    assert left < middle < right
