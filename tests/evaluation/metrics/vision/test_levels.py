"""The cycle metrics' comparisons on hand-computed cases, Hungarian matching against every
assignment, CIoU against torchvision's."""

import itertools
import math

import numpy as np
import pytest
import torch
from torchvision.ops import complete_box_iou_loss

from capbench_eval.metrics.vision.levels import (
    ciou_loss,
    cosine,
    harmonic_mean,
    mean_ciou_loss,
    object_matching,
    pixel_distance,
    scale_invariant_log_error,
)


def test_pixel_distance_is_the_rms_difference():
    a = np.zeros((2, 2, 3))
    b = a.copy()
    b[0, 0, 0] = 1.0
    assert pixel_distance(a, b) == pytest.approx(math.sqrt(1 / 12))
    assert pixel_distance(a, np.ones_like(a)) == 1.0
    assert pixel_distance(b, b) == 0.0
    with pytest.raises(ValueError, match="different shapes"):
        pixel_distance(a, np.zeros((3, 2, 3)))


def test_a_missing_object_costs_one_and_the_sum_is_over_the_originals():
    e1, e2, e3 = np.eye(3)
    cost, pairs = object_matching(np.stack([e1, e2]), np.stack([e1]))
    assert cost == pytest.approx(0.5)
    assert pairs == [(0, 0, pytest.approx(0.0))]
    cost, pairs = object_matching(np.stack([e1]), np.stack([e2, e1 * 3]))  # an extra generated object is free
    assert cost == pytest.approx(0.0)
    assert pairs == [(0, 1, pytest.approx(0.0))]
    assert object_matching(np.zeros((0, 3)), np.zeros((0, 3))) == (0.0, [])
    assert object_matching(np.zeros((0, 3)), np.stack([e3])) == (1.0, [])
    assert object_matching(np.stack([e1, e2]), np.zeros((0, 3))) == (1.0, [])


@pytest.mark.parametrize(("m", "n"), [(3, 3), (4, 2), (2, 4), (5, 5)])
def test_the_matching_is_the_cheapest_of_all_assignments(m, n):
    rng = np.random.default_rng(m * 10 + n)
    a, b = rng.normal(size=(m, 6)), rng.normal(size=(n, 6))
    cost, pairs = object_matching(a, b)
    padded = np.ones((m, max(m, n)))
    padded[:, :n] = [[1 - cosine(x, y) for y in b] for x in a]
    best = min(sum(padded[i, p[i]] for i in range(m)) for p in itertools.permutations(range(max(m, n)), m))
    assert cost == pytest.approx(best / m)
    assert len(pairs) == min(m, n)
    assert len({j for _, j, _ in pairs}) == len(pairs)


def test_ciou_by_hand_and_against_torchvision():
    assert ciou_loss((0, 0, 1, 1), (0, 0, 1, 1)) == pytest.approx(0.0, abs=1e-6)
    # disjoint unit squares two apart: IoU 0, centres 2 apart, enclosing box 3×1: 1 + 4/10
    assert ciou_loss((0, 0, 1, 1), (2, 0, 3, 1)) == pytest.approx(1.4, abs=1e-6)
    rng = np.random.default_rng(0)
    for _ in range(50):
        corners = rng.uniform(0, 1, size=(2, 2, 2))
        box, target = [tuple(np.concatenate([c.min(axis=0), c.max(axis=0)])) for c in corners]
        expected = complete_box_iou_loss(
            torch.tensor([box], dtype=torch.float64), torch.tensor([target], dtype=torch.float64)
        )
        assert ciou_loss(box, target) == pytest.approx(float(expected), abs=1e-6)


def test_mean_ciou_over_pairs_and_without_pairs():
    boxes = np.array([[0, 0, 1, 1], [2, 0, 3, 1]], dtype=float)
    assert mean_ciou_loss(boxes, boxes[::-1], [(0, 1, 0.0), (1, 0, 0.0)]) == pytest.approx(0.0, abs=1e-6)
    assert mean_ciou_loss(boxes, boxes, [(0, 1, 0.0)]) == pytest.approx(1.4, abs=1e-6)
    assert mean_ciou_loss(boxes, np.zeros((0, 4)), []) == 1.0
    assert mean_ciou_loss(np.zeros((0, 4)), np.zeros((0, 4)), []) == 0.0


def test_scale_invariant_log_error_by_hand():
    original = np.array([[1.0, 1.0]])
    assert scale_invariant_log_error(original * 7.5, original) == pytest.approx(0.0)
    # generated [1, e] → /e → log [−1, 0]; d = [−1, 0]: mean d² 0.5 − mean² 0.25
    assert scale_invariant_log_error(np.array([[1.0, math.e]]), original) == pytest.approx(0.25)
    floored = scale_invariant_log_error(np.array([[0.0, 1.0]]), original, eps=math.exp(-2))  # 0 → e⁻²
    assert floored == pytest.approx(0.5 * 4 - 1.0)
    with pytest.raises(ValueError, match="depth maps of different shapes"):
        scale_invariant_log_error(np.ones((2, 2)), np.ones((2, 3)))


def test_harmonic_mean():
    assert harmonic_mean([0.5, 1.0]) == pytest.approx(2 / 3)
    assert harmonic_mean([0.4, 0.4, 0.4, 0.4]) == pytest.approx(0.4)
    assert harmonic_mean([0.5, 0.0]) == 0.0
    assert harmonic_mean([0.5, -0.1]) == 0.0


def test_a_degenerate_box_still_has_a_one_pixel_crop():
    from PIL import Image

    from capbench_eval.metrics.vision.camscore import crop

    picture = Image.new("RGB", (512, 512))
    assert crop(picture, (10.2, 20.4, 10.3, 20.45)).size == (1, 1)
    assert crop(picture, (510.7, 511.6, 512.0, 512.0)).size == (1, 1)
    assert crop(picture, (0, 0, 100.4, 50.6)).size == (100, 51)
