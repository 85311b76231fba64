"""Window functions by name, as ``scipy.signal.get_window`` makes them.

A window's length is static, so the window is a constant: it is computed once on the host in
float64 NumPy and enters a traced program as a literal.

>>> get_window("hann", 4)
array([0. , 0.5, 1. , 0.5])
"""
from __future__ import annotations

import numpy as np


def _general_cosine(m, a):
    fac = np.linspace(-np.pi, np.pi, m)
    return sum(ak * np.cos(k * fac) for k, ak in enumerate(a))


def _general_hamming(m, alpha):
    return _general_cosine(m, [alpha, 1.0 - alpha])


def _boxcar(m):
    return np.ones(m)


def _triang(m):
    n = np.arange(1, (m + 1) // 2 + 1)
    if m % 2 == 0:
        w = (2 * n - 1.0) / m
        return np.r_[w, w[::-1]]
    w = 2 * n / (m + 1.0)
    return np.r_[w, w[-2::-1]]


def _parzen(m):
    n = np.arange(-(m - 1) / 2.0, (m - 1) / 2.0 + 0.5, 1.0)
    na = n[n < -(m - 1) / 4.0]
    nb = n[np.abs(n) <= (m - 1) / 4.0]
    wa = 2 * (1 - np.abs(na) / (m / 2.0)) ** 3.0
    wb = 1 - 6 * (np.abs(nb) / (m / 2.0)) ** 2.0 + 6 * (np.abs(nb) / (m / 2.0)) ** 3.0
    return np.r_[wa, wb, wa[::-1]]


def _bohman(m):
    fac = np.abs(np.linspace(-1, 1, m)[1:-1])
    w = (1 - fac) * np.cos(np.pi * fac) + 1.0 / np.pi * np.sin(np.pi * fac)
    return np.r_[0, w, 0]


def _bartlett(m):
    n = np.arange(m)
    return np.where(n <= (m - 1) / 2.0, 2.0 * n / (m - 1), 2.0 - 2.0 * n / (m - 1))


def _barthann(m):
    fac = np.abs(np.arange(m) / (m - 1.0) - 0.5)
    return 0.62 - 0.48 * fac + 0.38 * np.cos(2 * np.pi * fac)


def _cosine(m):
    return np.sin(np.pi / m * (np.arange(m) + 0.5))


def _tukey(m, alpha=0.5):
    if alpha <= 0:
        return np.ones(m)
    if alpha >= 1.0:
        return _general_hamming(m, 0.5)
    n = np.arange(m)
    width = int(np.floor(alpha * (m - 1) / 2.0))
    n1, n3 = n[:width + 1], n[m - width - 1:]
    w1 = 0.5 * (1 + np.cos(np.pi * (-1 + 2.0 * n1 / alpha / (m - 1))))
    w3 = 0.5 * (1 + np.cos(np.pi * (-2.0 / alpha + 1 + 2.0 * n3 / alpha / (m - 1))))
    return np.concatenate((w1, np.ones(m - len(n1) - len(n3)), w3))


def _kaiser(m, beta):
    n = np.arange(m)
    alpha = (m - 1) / 2.0
    return np.i0(beta * np.sqrt(1 - ((n - alpha) / alpha) ** 2.0)) / np.i0(float(beta))


def _gaussian(m, std):
    n = np.arange(m) - (m - 1.0) / 2.0
    return np.exp(-n ** 2 / (2 * std * std))


def _general_gaussian(m, p, sig):
    n = np.arange(m) - (m - 1.0) / 2.0
    return np.exp(-0.5 * np.abs(n / sig) ** (2 * p))


def _exponential(m, center=None, tau=1.0):
    center = (m - 1) / 2 if center is None else center
    return np.exp(-np.abs(np.arange(m) - center) / tau)


def _lanczos(m):
    def right(lo):
        return np.sinc(2.0 * np.arange(lo, m) / (m - 1) - 1.0)
    if m % 2 == 0:
        wh = right(m // 2)
        return np.r_[wh[::-1], wh]
    wh = right((m + 1) // 2)
    return np.r_[wh[::-1], 1.0, wh]


def _coefficients(*a):
    return lambda m: _general_cosine(m, a)


# name -> (function, aliases, number of required parameters)
_WINDOWS = {
    "boxcar": (_boxcar, ("box", "ones", "rect", "rectangular"), 0),
    "triang": (_triang, ("triangle", "tri"), 0),
    "parzen": (_parzen, ("parz", "par"), 0),
    "bohman": (_bohman, ("bman", "bmn"), 0),
    "blackman": (_coefficients(0.42, 0.50, 0.08), ("black", "blk"), 0),
    "nuttall": (_coefficients(0.3635819, 0.4891775, 0.1365995, 0.0106411), ("nutl", "nut"), 0),
    "blackmanharris": (_coefficients(0.35875, 0.48829, 0.14128, 0.01168),
                       ("blackharr", "bkh"), 0),
    "flattop": (_coefficients(0.21557895, 0.41663158, 0.277263158, 0.083578947, 0.006947368),
                ("flat", "flt"), 0),
    "bartlett": (_bartlett, ("bart", "brt"), 0),
    "barthann": (_barthann, ("brthan", "bth"), 0),
    "hamming": (_coefficients(0.54, 0.46), ("hamm", "ham"), 0),
    "hann": (_coefficients(0.5, 0.5), ("han",), 0),
    "cosine": (_cosine, ("halfcosine",), 0),
    "tukey": (_tukey, ("tuk",), 0),
    "lanczos": (_lanczos, ("sinc",), 0),
    "exponential": (_exponential, ("poisson",), 0),
    "kaiser": (_kaiser, ("ksr",), 1),
    "gaussian": (_gaussian, ("gauss", "gss"), 1),
    "general_gaussian": (_general_gaussian,
                         ("general gaussian", "general_gauss", "general gauss", "ggs"), 2),
    "general_cosine": (_general_cosine, (), 1),
    "general_hamming": (_general_hamming, (), 1),
}
_BY_NAME = {alias: (name, fn, nargs) for name, (fn, aliases, nargs) in _WINDOWS.items()
            for alias in (name,) + aliases}


def get_window(window, nx: int, fftbins: bool = True) -> np.ndarray:
    """The float64 window ``window`` of length ``nx``: a name, a ``(name, *params)`` tuple, or a
    number (a Kaiser window's beta), as in ``scipy.signal.get_window``. ``fftbins=True`` gives
    the periodic window spectral analysis uses, ``False`` the symmetric one.

    >>> get_window("hann", 5, fftbins=False)
    array([0. , 0.5, 1. , 0.5, 0. ])
    """
    if isinstance(window, (int, float, np.number)) and not isinstance(window, bool):
        name, args = "kaiser", (window,)
    elif isinstance(window, tuple) and window and isinstance(window[0], str):
        name, args = window[0], window[1:]
    elif isinstance(window, str):
        name, args = window, ()
    else:
        raise ValueError(f"get_window: window must be a name, a (name, *params) tuple or a "
                         f"number, got {window!r}")
    if name not in _BY_NAME:
        raise ValueError(f"get_window: unknown window type {name!r}; known: "
                         f"{sorted(_WINDOWS)}")
    name, fn, nargs = _BY_NAME[name]
    if len(args) < nargs:
        raise ValueError(f"The {name!r} window needs one or more parameters -- pass a tuple.")
    if name == "exponential" and not fftbins and args and args[0] is not None:
        raise ValueError("If sym==True, center must be None.")
    nx = int(nx)
    if nx < 0:
        raise ValueError(f"get_window: window length must be non-negative, got {nx}")
    if nx <= 1:
        return np.ones(nx)
    m = nx + 1 if fftbins else nx
    w = np.asarray(fn(m, *args), dtype=np.float64)
    return w[:-1] if fftbins else w
