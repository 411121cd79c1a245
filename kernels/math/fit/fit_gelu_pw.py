#!/usr/bin/env python3
"""Piecewise-polynomial GELU-backward factors for kernels/math/gelu_pw-inl.h.

Reproduce:  .venv/bin/python kernels/math/fit/fit_gelu_pw.py [--degree 5]
            .venv/bin/python kernels/math/fit/fit_gelu_pw.py --degree 3 --segments 32
(the project's venv from scripts/setup-python has numpy and scipy).

f(x) = g-factor of the GELU backward (gradInput = g * f(x)):
  erf mode   f(x) = Phi(x) + x phi(x)
  tanh mode  f(x) = 0.5 (1 + tanh v) + 0.5 x (1 - tanh^2 v) v',
             v = sqrt(2/pi) (x + 0.044715 x^3)
x is clamped to [-8, 8) and split into 16 unit segments, k = floor(x) + 8;
on segment k, f = P_k(u) with u = x - floor(x) - 0.5 in [-0.5, 0.5). The
outer segments are exactly 0 and 1 (|f - {0,1}| < 1e-12 there), which also
makes f(+-Inf) and f(+-FLT_MAX) exact. On AVX-512 each coefficient table is
one 16-lane register: a lookup is one vpermps.

Fit: weighted minimax by linear programming on a dense grid per segment;
the weight is the spec metric's sensitivity (g = 1): 1 / max(|f|, 1/16).
The coefficients are rounded to float32 and the error re-measured with a
float32 Horner evaluation.

--segments 32 (the 16-bit kernels' "erf_pw4h", "tanh_pw4h", native_f32_ops.h; degree 3 was dropped):
32 half-unit segments, t = 2x + 16 clamped to [0, 32), k = floor(t), f =
P_k(u) with u = t - k in [0, 1) (not centred: one subtraction less); each
coefficient table is two registers, a lookup one vpermt2ps. Segment 0
([-8, -7.5)) is exactly 0 and segment 31 exactly 1.
"""
import argparse
import math

import numpy as np
from scipy.optimize import linprog
from scipy.special import erf

SQ2PI = math.sqrt(2 / math.pi)


def f_erf(x):
    return 0.5 * (1 + erf(x / math.sqrt(2))) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def f_tanh(x):
    v = SQ2PI * (x + 0.044715 * x ** 3)
    t = np.tanh(v)
    dv = SQ2PI * (1 + 3 * 0.044715 * x * x)
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * dv


def minimax(u, y, deg):
    """Coefficients c_0..c_deg of sum c_j u^j minimizing the largest weighted
    error w |p(u) - y|, w = 1 / max(|y|, 1/16) (linear programming)."""
    pts = len(u)
    w = 1.0 / np.maximum(np.abs(y), 1 / 16)
    # minimize e subject to |w (sum c_j u^j - y)| <= e
    V = np.vander(u, deg + 1, increasing=True)
    A = np.vstack([np.hstack([w[:, None] * V, -np.ones((pts, 1))]),
                   np.hstack([-w[:, None] * V, -np.ones((pts, 1))])])
    b = np.concatenate([w * y, -w * y])
    c = np.zeros(deg + 2)
    c[-1] = 1
    r = linprog(c, A_ub=A, b_ub=b, bounds=[(None, None)] * (deg + 2), method="highs")
    assert r.success, r.message
    return r.x[:-1]


def fit_segment(f, k, deg, pts=1500):
    u = np.linspace(-0.5, 0.5, pts)
    return minimax(u, f(k - 8.0 + 0.5 + u), deg)


def fit_half_segment(f, k, deg, pts=1500):
    u = np.linspace(0.0, 1.0, pts)
    return minimax(u, f((k + u) / 2 - 8.0), deg)


def eval_f32_half(coefs, x):
    x = np.float32(x)
    t = (x * np.float32(2) + np.float32(16)).astype(np.float32)
    t = np.minimum(np.maximum(t, np.float32(0)), np.float32(31.999998))
    k = np.floor(t)
    u = (t - k).astype(np.float32)
    k = k.astype(np.int32)
    acc = coefs[-1][k]
    for j in range(len(coefs) - 2, -1, -1):
        acc = (acc * u + coefs[j][k]).astype(np.float32)
    return acc


def main_half(deg):
    for name, f in (("erf", f_erf), ("tanh", f_tanh)):
        tab = np.zeros((deg + 1, 32), dtype=np.float32)
        tab[0, 31] = 1.0
        for k in range(1, 31):
            tab[:, k] = np.float32(fit_half_segment(f, k, deg))
        xs = np.concatenate([np.linspace(-9, 9, 2_000_001), np.arange(-8, 8.5, 0.5)]).astype(np.float32)
        ref = f(xs.astype(np.float64))
        got = eval_f32_half(tab, xs).astype(np.float64)
        err = np.abs(got - ref) / np.maximum(np.abs(ref), 1 / 16)
        print(f"// {name}: degree {deg}, 32 half-unit segments, max spec error (g = 1, float32 Horner) "
              f"{err.max():.3g} at x = {xs[err.argmax()]:.6g}")
        print(f"alignas(64) inline constexpr float k{name.capitalize()}Pw{deg}h[{deg + 1}][32] = {{")
        for j in range(deg + 1):
            vals = ", ".join(float(v).hex() + "f" for v in tab[j])
            print(f"    {{{vals}}},")
        print("};")


def eval_f32(coefs, x):
    x = np.float32(x)
    xc = np.minimum(np.maximum(x, np.float32(-8)), np.float32(7.9999995))
    fl = np.floor(xc)
    k = (fl + 8).astype(np.int32)
    u = (xc - fl - np.float32(0.5)).astype(np.float32)
    acc = coefs[-1][k]
    for j in range(len(coefs) - 2, -1, -1):
        acc = (acc * u + coefs[j][k]).astype(np.float32)
    return acc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--degree", type=int, default=5)
    ap.add_argument("--segments", type=int, default=16, choices=(16, 32))
    args = ap.parse_args()
    if args.segments == 32:
        return main_half(args.degree)
    for name, f in (("erf", f_erf), ("tanh", f_tanh)):
        tab = np.zeros((args.degree + 1, 16), dtype=np.float32)
        tab[0, 15] = 1.0  # segment [7, 8): exactly 1; segment [-8, -7): exactly 0
        for k in range(1, 15):
            tab[:, k] = np.float32(fit_segment(f, k, args.degree))
        xs = np.concatenate([np.linspace(-9, 9, 2_000_001), np.arange(-8, 8.5, 0.5)]).astype(np.float32)
        ref = f(xs.astype(np.float64))
        got = eval_f32(tab, xs).astype(np.float64)
        err = np.abs(got - ref) / np.maximum(np.abs(ref), 1 / 16)
        print(f"// {name}: degree {args.degree}, max spec error (g = 1, float32 Horner) {err.max():.3g} "
              f"at x = {xs[err.argmax()]:.6g}")
        print(f"static constexpr float k{name.capitalize()}Pw{args.degree}[{args.degree + 1}][16] = {{")
        for j in range(args.degree + 1):
            vals = ", ".join(float(v).hex() + "f" for v in tab[j])
            print(f"    {{{vals}}},")
        print("};")


if __name__ == "__main__":
    main()
