"""The comparisons the cycle metrics make between an original picture and the one generated from
the caption (metrics.md §11–12), as plain functions on arrays so each can be checked by hand."""

from __future__ import annotations

import math

import numpy as np


def cosine(u: np.ndarray, v: np.ndarray) -> float:
    return float(np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v)))


def pixel_distance(original: np.ndarray, generated: np.ndarray) -> float:
    """CAMScore's L_pix, the Euclidean distance over every pixel and channel of two same-size
    pictures with values in [0, 1], divided by √(number of values): the RMS difference, in [0, 1]
    whatever the size (the raw 0–255 sum would saturate the sigmoid the fusion applies)."""
    if original.shape != generated.shape:
        raise ValueError(f"pictures of different shapes: {original.shape} and {generated.shape}")
    difference = original.astype(np.float64) - generated.astype(np.float64)
    return float(np.sqrt(np.mean(difference**2)))


def object_matching(original: np.ndarray, generated: np.ndarray) -> tuple[float, list[tuple[int, int, float]]]:
    """CAMScore's L_obj: crops' features of the original's m objects and the generated picture's n.
    Cost = 1 − cosine; with m > n the matrix is padded to m×m with cost 1 (an object the generated
    picture lacks costs the most); Hungarian assignment; the matched costs summed over m (so in
    [0, 2], 1 when nothing matches). Returns it and the real pairs (i, j, cost).
    No objects in the original: 0 when the generated picture has none either, else 1."""
    from scipy.optimize import linear_sum_assignment  # here: importing the metrics must not load scipy.optimize

    m, n = len(original), len(generated)
    if m == 0:
        return (0.0 if n == 0 else 1.0), []
    cost = np.ones((m, max(m, n)))
    if n:
        a = original / np.linalg.norm(original, axis=1, keepdims=True)
        b = generated / np.linalg.norm(generated, axis=1, keepdims=True)
        cost[:, :n] = 1.0 - a @ b.T
    rows, columns = linear_sum_assignment(cost)
    pairs = [(int(i), int(j), float(cost[i, j])) for i, j in zip(rows, columns, strict=True) if j < n]
    return float(cost[rows, columns].sum() / m), pairs


def ciou_loss(box: tuple[float, float, float, float], target: tuple[float, float, float, float]) -> float:
    """Complete-IoU loss of two (x1, y1, x2, y2) boxes: 1 − IoU + d²/c² + α·v, with d the distance
    of the centres, c the diagonal of the smallest enclosing box, v = 4/π²·(atan(w_t/h_t) − atan(w/h))²
    and α = v / (1 − IoU + v) (Zheng et al. 2020)."""
    eps = 1e-7
    x1, y1, x2, y2 = box
    u1, v1, u2, v2 = target
    inter = max(0.0, min(x2, u2) - max(x1, u1)) * max(0.0, min(y2, v2) - max(y1, v1))
    union = (x2 - x1) * (y2 - y1) + (u2 - u1) * (v2 - v1) - inter
    iou = inter / (union + eps)
    diagonal = (max(x2, u2) - min(x1, u1)) ** 2 + (max(y2, v2) - min(y1, v1)) ** 2 + eps
    centres = ((x1 + x2) / 2 - (u1 + u2) / 2) ** 2 + ((y1 + y2) / 2 - (v1 + v2) / 2) ** 2
    v = 4 / math.pi**2 * (math.atan((u2 - u1) / (v2 - v1 + eps)) - math.atan((x2 - x1) / (y2 - y1 + eps))) ** 2
    alpha = v / (1 - iou + v + eps)
    return 1 - iou + centres / diagonal + alpha * v


def mean_ciou_loss(
    original_boxes: np.ndarray, generated_boxes: np.ndarray, pairs: list[tuple[int, int, float]]
) -> float:
    """CAMScore's L_CIoU: the mean CIoU loss over matched pairs (boxes already scaled to [0, 1] by
    their picture's size). No pair: 1 when either picture has objects (nothing where it should
    be), 0 when neither has any."""
    if not pairs:
        return 1.0 if len(original_boxes) or len(generated_boxes) else 0.0
    return float(np.mean([ciou_loss(tuple(generated_boxes[j]), tuple(original_boxes[i])) for i, j, _ in pairs]))


def scale_invariant_log_error(generated: np.ndarray, original: np.ndarray, eps: float = 1e-3) -> float:
    """Eigen et al.'s scale-invariant error with λ = 1: mean(d²) − mean(d)², d = log D_gen − log D_ori.
    Depth Anything gives relative inverse depth that may be 0: each map is divided by its own
    maximum (which the error ignores anyway) and floored at `eps` before the logarithm."""
    if generated.shape != original.shape:
        raise ValueError(f"depth maps of different shapes: {generated.shape} and {original.shape}")

    def log_depth(depth: np.ndarray) -> np.ndarray:
        depth = depth.astype(np.float64)
        peak = depth.max()
        return np.log(np.maximum(depth / peak if peak > 0 else depth, eps))

    d = log_depth(generated) - log_depth(original)
    return float(np.mean(d**2) - np.mean(d) ** 2)


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def harmonic_mean(values: list[float]) -> float:
    """k / Σ 1/x; 0 when any value is 0 or below (HICE-S's combination of its scores)."""
    if any(value <= 0 for value in values):
        return 0.0
    return len(values) / sum(1.0 / value for value in values)
