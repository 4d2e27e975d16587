"""95% intervals of evaluation results: success rates (Wilson score interval) and mean returns (Student's t).

Wilson: E. B. Wilson (1927), "Probable inference, the law of succession, and statistical inference", JASA 22:209.
Mean return: ``mean ± t_{0.975, n-1} s/√n`` with the two-sided t quantiles of a standard table.
"""

from __future__ import annotations

import math

#: z of a two-sided 95% normal interval.
Z_95 = 1.959963984540054
#: Two-sided 95% Student-t quantiles ``t_{0.975, df}`` for df = 1..30 (standard t table); beyond 30 the normal z.
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion; ``(0, 1)`` when ``n == 0``."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def mean_interval(values: list[float]) -> tuple[float, float, float]:
    """``(mean, low, high)``: Student-t 95% interval of the mean (zero width for n < 2 or no spread; NaN for n = 0)."""
    n = len(values)
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    mean = sum(values) / n
    if n < 2:
        return mean, mean, mean
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = (T_975[n - 2] if n - 1 <= len(T_975) else Z_95) * sd / math.sqrt(n)
    return mean, mean - half, mean + half
