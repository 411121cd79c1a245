#!/usr/bin/env python3
"""Coefficient fits for kernels/math (actgrad).

Reproduce:  python3 -m venv /tmp/math-venv && /tmp/math-venv/bin/pip install numpy scipy mpmath
            /tmp/math-venv/bin/python kernels/math/fit/fit_gelu.py [--scan]

Fits (weighted minimax by linear programming on a dense grid, then the
coefficients are rounded to float32 and the error re-measured in double):

1. exp(r) = 1 + r + r^2 * Q(r) on r in [-ln2/2, ln2/2] (relative error), for
   several degrees: `math::ExpPolyN<N>` in kernels/math/poly-inl.h.

2. The GELU-backward factor in "Mills ratio" form.  With a = |x|,
   phi(a) = exp(-a^2/2)/sqrt(2 pi), R(a) = Phi(-a)/phi(a) (Mills ratio) and
   s(a) = phi(a) * (a - R(a)):
        f(x) = 1 + s(a)   for x >= 0,      f(x) = -s(a)   for x < 0.
   a - R(a) has a simple root a0 (~0.7518; f(-a0) = 0), so we write
        a - R(a) = (a - a0) * H(a) * sqrt(2 pi)
   with H smooth and positive, and fit H (1/sqrt(2 pi) folded in) as a
   polynomial in t = 1/(1 + p*a) or in u = p*a/(1 + p*a) = 1 - t.
   Then s = exp(-a^2/2) * (a - a0) * P(t), no cancellation anywhere
   (kernels/math/gelu_erf-inl.h, erf_r2 / erf_r3 / erf_r6).
   The fit weight is the sensitivity of the spec metric (g = 1,
   floor 1/16) to a relative error of H: w = |s| / min(max(|s|, 1/16), 1 + s).
"""
import argparse
import math
import sys

import mpmath as mp
import numpy as np
from scipy.optimize import linprog
from scipy.special import erfcx

mp.mp.dps = 40
SQRT2PI = math.sqrt(2 * math.pi)


def f32(v):
    return np.float32(v).item()


def hexf(v):
    """C hex-float literal of the float32 value, e.g. 0x1.0205p-1."""
    h = float(np.float32(v)).hex()
    mant, exp = h.split("p")
    if "." in mant:
        mant = mant.rstrip("0").rstrip(".")
    return mant + "p" + exp


def _lp_once(A, b, w):
    n, m = A.shape
    Aw = A * w[:, None]
    bw = b * w
    cost = np.zeros(m + 1)
    cost[-1] = 1.0
    ones = np.ones((n, 1))
    A_ub = np.vstack([np.hstack([Aw, -ones]), np.hstack([-Aw, -ones])])
    b_ub = np.concatenate([bw, -bw])
    bounds = [(None, None)] * m + [(0, None)]
    res = linprog(cost, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if not res.success:
        raise RuntimeError(res.message)
    return res.x[:m]


def lp_minimax(A, b, w, fixed=None):
    """min_c max_i w_i |A_i c - b_i|  (A: n x m), by LP with iterative
    refinement (the solver's tolerances are ~1e-7, far above the errors we
    fit).  fixed: {index: value} coefficients held fixed (already rounded).
    Returns (c, E)."""
    n, m = A.shape
    fixed = fixed or {}
    free = [j for j in range(m) if j not in fixed]
    c = np.zeros(m)
    for j, v in fixed.items():
        c[j] = v
    Af = A[:, free]
    for _ in range(4):
        r = b - A @ c
        scale = np.max(np.abs(w * r))
        if scale == 0:
            break
        d = _lp_once(Af, r / scale, w)
        c[free] += d * scale
    E = np.max(np.abs(w * (A @ c - b)))
    return c, E


def lp_minimax_f32(A, b, w):
    """As lp_minimax, then round the coefficients to float32 one at a time
    (lowest first), refitting the remaining ones after each rounding."""
    m = A.shape[1]
    c, E = lp_minimax(A, b, w)
    fixed = {}
    for j in range(m):
        fixed[j] = f32(c[j])
        if j + 1 < m:
            c, _ = lp_minimax(A, b, w, fixed)
    c = np.array([fixed[j] for j in range(m)])
    return [float(v) for v in c], E, np.max(np.abs(w * (A @ c - b)))


# ---------------------------------------------------------------- exp(r)
LN2 = math.log(2.0)


def fit_exp(deg, npts=4001):
    """exp(r) ~= 1 + r + r^2 * sum_{j=0}^{deg-2} q_j r^j, relative minimax."""
    lo, hi = -LN2 / 2 * 1.0005, LN2 / 2 * 1.0005
    r = np.linspace(lo, hi, npts)
    ex = np.exp(r)
    m = deg - 1
    A = np.stack([r ** (2 + j) for j in range(m)], axis=1) / ex[:, None]
    b = (ex - 1 - r) / ex
    return lp_minimax_f32(A, b, np.ones_like(r))


# ---------------------------------------------------------------- GELU factor
def mills(a):
    return math.sqrt(math.pi / 2) * erfcx(a / math.sqrt(2))


def root_a0():
    f = lambda a: a - mp.sqrt(mp.pi / 2) * mp.exp(a * a / 2) * mp.erfc(a / mp.sqrt(2))
    return mp.findroot(f, 0.75)


A0 = root_a0()
A0F = float(A0)


def h_target(a):
    """H(a) = (a - R(a)) / (a - a0) / sqrt(2 pi), in double (mpmath near a0)."""
    out = np.empty_like(a)
    for i, v in enumerate(a):
        if abs(v - A0F) < 1e-3:
            vv = mp.mpf(v)
            g = vv - mp.sqrt(mp.pi / 2) * mp.exp(vv * vv / 2) * mp.erfc(vv / mp.sqrt(2))
            out[i] = float(g / (vv - A0) / mp.sqrt(2 * mp.pi))
        else:
            out[i] = (v - mills(v)) / (v - A0F) / SQRT2PI
    return out


def metric_weight(a):
    s = np.exp(-a * a / 2) / SQRT2PI * (a - np.array([mills(v) for v in a]))
    return np.abs(s) / np.minimum(np.maximum(np.abs(s), 1.0 / 16), 1 + s)


def gelu_grid(amax=9.0, n=6000):
    # denser near 0..4 where the weight is 1
    a = np.concatenate([np.linspace(0, 4.5, int(n * 0.7)), np.linspace(4.5, amax, int(n * 0.3))])
    a = np.unique(a)
    return a


_GRID = None


def fit_gelu_h(p, deg, amax=9.0, basis="t"):
    global _GRID
    if _GRID is None or _GRID[0] != amax:
        a = gelu_grid(amax)
        _GRID = (amax, a, h_target(a), metric_weight(a))
    _, a, h, w = _GRID
    w = np.maximum(w, 1e-4)  # keep the polynomial sane where s is negligible
    p = f32(p)  # the kernels use the float32 value
    t = 1.0 / (1.0 + p * a)
    if basis == "u":  # u = p a / (1 + p a) = 1 - t
        t = p * a * t
    A = np.stack([t ** j for j in range(deg + 1)], axis=1) / h[:, None]
    b = np.ones_like(a)
    cf, E, err = lp_minimax_f32(A, b, w)
    # sensitivity of P to a relative error of t: max w * |t P'(t) / P(t)|
    pe = np.polyval(cf[::-1], t)
    dp = np.polyval(np.polyder(np.array(cf[::-1])), t)
    sens = np.max(w * np.abs(t * dp / pe))
    return cf, E, err, sens


def emit(name, coefs):
    body = ", ".join(hexf(v) + "f" for v in coefs)
    return f"  // {name}\n  {{{body}}}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scan", action="store_true", help="scan p and the degree")
    args = ap.parse_args()

    print("# exp(r) = 1 + r + r^2 Q(r), |r| <= ln2/2; coefficients of Q (low -> high)")
    for deg in (3, 4, 5, 6):
        cf, E, err = fit_exp(deg)
        print(f"deg {deg}: lp err {E:.3e}, f32-coef err {err:.3e}")
        print("   ", ", ".join(hexf(v) + "f" for v in cf))

    a0h = f32(A0)
    a0l = f32(float(A0) - a0h)
    print(f"\n# a0 = {mp.nstr(A0, 20)}  hi {hexf(a0h)}f  lo {hexf(a0l)}f")

    if args.scan:
        for deg in range(2, 9):
            best = None
            for p in np.round(np.arange(0.25, 0.605, 0.01), 3):
                try:
                    _, E, err, _ = fit_gelu_h(float(p), deg)
                except RuntimeError:
                    continue
                if best is None or err < best[1]:
                    best = (p, err, E)
            print(f"deg {deg}: best p {best[0]} f32 err {best[1]:.3e} (lp {best[2]:.3e})")
            sys.stdout.flush()

    print("\n# H polynomials (low -> high) in t = 1/(1 + p a) or u = p a/(1 + p a)")
    for name, deg, p, basis in CHOSEN:
        cf, E, err, sens = fit_gelu_h(p, deg, basis=basis)
        print(f"{name}: deg {deg} in {basis}, p {p} ({hexf(p)}f): lp err {E:.3e}, "
              f"f32-coef err {err:.3e}, {basis}-sensitivity {sens:.3f}")
        print("   ", ", ".join(hexf(v) + "f" for v in cf))


# (policy, degree, p, basis) used by gelu_erf-inl.h; p chosen by --scan (t
# basis, step 0.01; the minimum is sharp), used as the float32 value f32(p).
# erf_r6 uses the u basis (same polynomial space, better rounding near a = 0;
# its f32 error is dominated by the rounding of the constant term H(0)).
CHOSEN = [("erf_r2", 2, 0.39, "t"), ("erf_r3", 3, 0.3, "t"), ("erf_r6", 6, 0.35, "u")]

if __name__ == "__main__":
    main()
