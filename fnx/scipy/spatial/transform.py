"""fnx.scipy.spatial.transform: 3-D rotations (SciPy's ``Rotation`` and ``Slerp``, as JAX has
them), stored as unit quaternions ``(x, y, z, w)`` in a NamedTuple, so a ``Rotation`` is a pytree
that ``jit``, ``vmap`` and ``grad`` pass through. Every method works on one rotation (a quaternion
of shape ``(4,)``) or a stack of them (``(N, 4)``).

>>> from fnx.scipy.spatial.transform import Rotation
>>> Rotation.from_euler("z", 90, degrees=True).apply(jnp.array([1.0, 0.0, 0.0])).round(6)
Array([0., 1., 0.], dtype=float32)
"""
from __future__ import annotations

import re
import typing

import numpy as np

from ... import numpy as jnp
from ...numpy import linalg as jnp_linalg

__all__ = ["Rotation", "Slerp"]

_AXIS_INDEX = {"x": 0, "y": 1, "z": 2}


def _parse_seq(seq: str, lengths) -> tuple[tuple[int, ...], bool]:
    """The axis indices of an Euler sequence and whether it is intrinsic (upper case)."""
    if len(seq) not in lengths:
        raise ValueError(f"Expected axis specification to be a string of "
                         f"{' or '.join(map(str, lengths))} characters, got {seq!r}")
    intrinsic = re.match(r"^[XYZ]{1,3}$", seq) is not None
    if not (intrinsic or re.match(r"^[xyz]{1,3}$", seq)):
        raise ValueError(f"Expected axes from `seq` to be from ['x', 'y', 'z'] or "
                         f"['X', 'Y', 'Z'], got {seq!r}")
    if any(a == b for a, b in zip(seq, seq[1:])):
        raise ValueError(f"Expected consecutive axes to be different, got {seq!r}")
    return tuple(_AXIS_INDEX[c] for c in seq.lower()), intrinsic


def _norm(v):
    return jnp.sqrt(jnp.sum(v * v, axis=-1))


def _normalize(quat):
    quat = jnp.asarray(quat)
    if quat.dtype.kind not in "fc":
        quat = quat.astype(float)
    return quat / _norm(quat)[..., None]


def _compose(p, q):
    """The quaternion product ``p q`` (the rotation ``q`` followed by ``p``)."""
    p, q = jnp.broadcast_arrays(p, q)
    cross = jnp.cross(p[..., :3], q[..., :3])
    pw, qw = p[..., 3:], q[..., 3:]
    xyz = pw * q[..., :3] + qw * p[..., :3] + cross
    w = pw * qw - jnp.sum(p[..., :3] * q[..., :3], axis=-1, keepdims=True)
    return jnp.concatenate([xyz, w], axis=-1)


def _elementary(axis: int, angle):
    half = angle / 2
    zero = jnp.zeros_like(half)
    parts = [zero, zero, zero, jnp.cos(half)]
    parts[axis] = jnp.sin(half)
    return jnp.stack(parts, axis=-1)


def _as_matrix(q):
    x, y, z, w = (q[..., i] for i in range(4))
    x2, y2, z2, w2 = x * x, y * y, z * z, w * w
    xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
    rows = [[x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)],
            [2 * (xy + zw), -x2 + y2 - z2 + w2, 2 * (yz - xw)],
            [2 * (xz - yw), 2 * (yz + xw), -x2 - y2 + z2 + w2]]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


def _from_matrix(m):
    """The quaternion of a rotation matrix, by the largest of its diagonal and trace (the
    numerically safe branch of each, as SciPy chooses)."""
    m = jnp.asarray(m)
    if m.dtype.kind not in "fc":
        m = m.astype(float)
    d = [m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]]
    trace = d[0] + d[1] + d[2]
    choice = jnp.argmax(jnp.stack(d + [trace], axis=-1), axis=-1)
    candidates = []
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        q = [None] * 4
        q[i] = 1 - trace + 2 * m[..., i, i]
        q[j] = m[..., j, i] + m[..., i, j]
        q[k] = m[..., k, i] + m[..., i, k]
        q[3] = m[..., k, j] - m[..., j, k]
        candidates.append(jnp.stack(q, axis=-1))
    candidates.append(jnp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                                 m[..., 1, 0] - m[..., 0, 1], 1 + trace], axis=-1))
    quat = candidates[3]
    for i in range(3):
        quat = jnp.where((choice == i)[..., None], candidates[i], quat)
    return _normalize(quat)


def _from_rotvec(rotvec, degrees: bool):
    rotvec = jnp.asarray(rotvec)
    if rotvec.dtype.kind not in "fc":
        rotvec = rotvec.astype(float)
    if degrees:
        rotvec = jnp.deg2rad(rotvec)
    angle = _norm(rotvec)
    a2 = angle * angle
    small = 0.5 - a2 / 48 + a2 * a2 / 3840       # sin(a/2)/a by its series near 0
    safe = jnp.where(angle <= 1e-3, 1.0, angle)
    scale = jnp.where(angle <= 1e-3, small, jnp.sin(safe / 2) / safe)
    return jnp.concatenate([scale[..., None] * rotvec, jnp.cos(angle / 2)[..., None]], axis=-1)


def _as_rotvec(q, degrees: bool):
    q = jnp.where(q[..., 3:] < 0, -q, q)        # w >= 0 puts the angle in [0, pi]
    angle = 2 * jnp.arctan2(_norm(q[..., :3]), q[..., 3])
    a2 = angle * angle
    small = 2 + a2 / 12 + 7 * a2 * a2 / 2880     # a/sin(a/2) by its series near 0
    safe = jnp.where(angle <= 1e-3, 1.0, angle)
    scale = jnp.where(angle <= 1e-3, small, safe / jnp.sin(safe / 2))
    if degrees:
        scale = jnp.rad2deg(scale)
    return scale[..., None] * q[..., :3]


def _as_euler(q, axes, extrinsic: bool, degrees: bool):
    """Euler angles of quaternions (Bernardes and Viollet, 2022, as SciPy computes them)."""
    first, third = (0, 2) if extrinsic else (2, 0)
    i, j, k = axes if extrinsic else axes[::-1]
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2
    qw, qi, qj, qk = q[..., 3], q[..., i], q[..., j], q[..., k]
    if symmetric:
        a, b, c, d = qw, qi, qj, qk * sign
    else:
        a, b, c, d = qw - qj, qi + qk * sign, qj + qw, qk * sign - qi
    middle = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
    eps = 1e-7
    case = jnp.where(jnp.abs(middle) <= eps, 1, jnp.where(jnp.abs(middle - np.pi) <= eps, 2, 0))
    half_sum, half_diff = jnp.arctan2(b, a), jnp.arctan2(d, c)
    degenerate = jnp.where(case == 1, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
    angles = [None, middle, None]
    angles[first] = jnp.where(case == 0, half_sum - half_diff, jnp.zeros_like(half_sum))
    angles[third] = jnp.where(case == 0, half_sum + half_diff, jnp.zeros_like(half_sum))
    angles[0] = jnp.where(case == 0, angles[0], degenerate)   # degenerate: the third is 0
    if not symmetric:
        angles[third] = angles[third] * sign
        angles[1] = angles[1] - np.pi / 2
    out = (jnp.stack(angles, axis=-1) + np.pi) % (2 * np.pi) - np.pi
    return jnp.rad2deg(out) if degrees else out


def _canonical(q):
    neg, zero = q < 0, q == 0
    flip = (neg[..., 3] | (zero[..., 3] & neg[..., 0])
            | (zero[..., 3] & zero[..., 0] & neg[..., 1])
            | (zero[..., 3] & zero[..., 0] & zero[..., 1] & neg[..., 2]))
    return jnp.where(flip[..., None], -q, q)


class Rotation(typing.NamedTuple):
    """Rotations in 3 dimensions, held as unit quaternions ``quat`` of shape ``(4,)`` or
    ``(N, 4)``, scalar last (SciPy's ``scipy.spatial.transform.Rotation``).

    >>> r = Rotation.from_euler("z", 90, degrees=True)
    >>> r.as_rotvec()
    Array([0.       , 0.       , 1.5707964], dtype=float32)
    >>> (r * Rotation.from_euler("x", 90, degrees=True)).as_matrix().round(6)
    Array([[0., 0., 1.],
           [1., 0., 0.],
           [0., 1., 0.]], dtype=float32)
    """
    quat: typing.Any

    @classmethod
    def concatenate(cls, rotations: typing.Sequence):
        """The rotations of a sequence of ``Rotation`` objects, as one stack.

        >>> len(Rotation.concatenate([Rotation.identity(2), Rotation.identity()]))
        3
        """
        return cls(jnp.concatenate([jnp.atleast_2d(r.quat) for r in rotations]))

    @classmethod
    def from_euler(cls, seq: str, angles, degrees: bool = False):
        """Rotations from Euler angles about the axes of ``seq`` ('xyz': extrinsic, about the
        fixed axes; 'XYZ': intrinsic, about the rotating ones).

        >>> Rotation.from_euler("xy", [90, 90], degrees=True).as_euler("xyz", degrees=True)
        Array([90., 90.,  0.], dtype=float32)
        """
        axes, intrinsic = _parse_seq(seq, (1, 2, 3))
        angles = jnp.atleast_1d(jnp.asarray(angles))
        if angles.dtype.kind not in "fc":
            angles = angles.astype(float)
        if len(axes) == 1 and angles.shape[-1] != 1:
            angles = angles[..., None]          # 'z' with N angles: N rotations, as in SciPy
        if angles.shape[-1] != len(axes):
            raise ValueError(f"Expected angles of shape (..., {len(axes)}) for seq {seq!r}, "
                             f"got {angles.shape}")
        if degrees:
            angles = jnp.deg2rad(angles)
        quat = _elementary(axes[0], angles[..., 0])
        for n, axis in enumerate(axes[1:], 1):
            step = _elementary(axis, angles[..., n])
            quat = _compose(quat, step) if intrinsic else _compose(step, quat)
        return cls(quat)

    @classmethod
    def from_matrix(cls, matrix):
        """Rotations from rotation matrices of shape ``(3, 3)`` or ``(N, 3, 3)``.

        >>> Rotation.from_matrix(jnp.eye(3)).as_quat()
        Array([0., 0., 0., 1.], dtype=float32)
        """
        return cls(_from_matrix(matrix))

    @classmethod
    def from_mrp(cls, mrp):
        """Rotations from Modified Rodrigues Parameters (``tan(angle / 4)`` times the axis).

        >>> Rotation.from_mrp(jnp.array([0.0, 0.0, 1.0])).as_rotvec()
        Array([0.       , 0.       , 3.1415927], dtype=float32)
        """
        mrp = jnp.asarray(mrp)
        if mrp.dtype.kind not in "fc":
            mrp = mrp.astype(float)
        sq1 = jnp.sum(mrp * mrp, axis=-1, keepdims=True) + 1
        return cls(jnp.concatenate([2 * mrp, 2 - sq1], axis=-1) / sq1)

    @classmethod
    def from_quat(cls, quat, *, scalar_first: bool = False):
        """Rotations from quaternions (normalized here), scalar last unless ``scalar_first``.

        >>> Rotation.from_quat(jnp.array([0.0, 0.0, 2.0, 0.0])).as_quat()
        Array([0., 0., 1., 0.], dtype=float32)
        """
        quat = jnp.asarray(quat)
        if quat.shape[-1:] != (4,):
            raise ValueError(f"Expected quaternions of shape (4,) or (N, 4), got {quat.shape}")
        if scalar_first:
            quat = jnp.roll(quat, -1, axis=-1)
        return cls(_normalize(quat))

    @classmethod
    def from_rotvec(cls, rotvec, degrees: bool = False):
        """Rotations from rotation vectors (the axis times the angle).

        >>> Rotation.from_rotvec(jnp.array([0.0, np.pi / 2, 0.0])).as_quat()
        Array([0.        , 0.70710677, 0.        , 0.70710677], dtype=float32)
        """
        return cls(_from_rotvec(rotvec, degrees))

    @classmethod
    def identity(cls, num: int | None = None, dtype=float):
        """The identity rotation (``num`` of them, stacked, if given).

        >>> Rotation.identity().as_matrix()
        Array([[1., 0., 0.],
               [0., 1., 0.],
               [0., 0., 1.]], dtype=float32)
        """
        quat = jnp.array([0.0, 0.0, 0.0, 1.0], dtype=dtype)
        return cls(quat if num is None else jnp.tile(quat, (num, 1)))

    @classmethod
    def random(cls, random_key, num: int | None = None):
        """Rotations drawn uniformly (normalized Gaussian quaternions).

        >>> Rotation.random(fnx.random.key(0), 5).quat.shape
        (5, 4)
        """
        from ... import random
        shape = (4,) if num is None else (num, 4)
        return cls.from_quat(random.normal(random_key, shape))

    def __getitem__(self, indexer):
        """The rotation(s) at ``indexer`` of a stack."""
        if self.single:
            raise TypeError("Single rotation is not subscriptable.")
        return Rotation(self.quat[indexer])

    def __len__(self):
        """The number of rotations of a stack."""
        if self.single:
            raise TypeError("Single rotation has no len().")
        return self.quat.shape[0]

    def __mul__(self, other) -> Rotation:
        """The composition: ``other`` applied first, then ``self``."""
        return Rotation.from_quat(_compose(self.quat, other.quat))

    def apply(self, vectors, inverse: bool = False):
        """The vectors (shape ``(3,)`` or ``(N, 3)``) rotated (by the inverse, if ``inverse``).

        >>> Rotation.from_rotvec(jnp.array([0.0, 0.0, np.pi / 2])).apply(
        ...     jnp.array([1.0, 0.0, 0.0]), inverse=True).round(6)
        Array([ 0., -1.,  0.], dtype=float32)
        """
        matrix = self.as_matrix()
        matrix = jnp.where(inverse, jnp.swapaxes(matrix, -1, -2), matrix)
        return jnp.matmul(matrix, jnp.asarray(vectors)[..., None])[..., 0]

    def as_euler(self, seq: str, degrees: bool = False):
        """The Euler angles about the three axes of ``seq``, in ``[-pi, pi)``.

        >>> Rotation.from_euler("ZYX", [10, 20, 30], degrees=True).as_euler("ZYX", True).round(3)
        Array([10., 20., 30.], dtype=float32)
        """
        axes, intrinsic = _parse_seq(seq, (3,))
        return _as_euler(self.quat, axes, not intrinsic, degrees)

    def as_matrix(self):
        """The rotation matrices, of shape ``(3, 3)`` or ``(N, 3, 3)``.

        >>> Rotation.from_quat(jnp.array([1.0, 0.0, 0.0, 0.0])).as_matrix()
        Array([[ 1.,  0.,  0.],
               [ 0., -1.,  0.],
               [ 0.,  0., -1.]], dtype=float32)
        """
        return _as_matrix(self.quat)

    def as_mrp(self):
        """The Modified Rodrigues Parameters (of the rotation by the angle at most pi).

        >>> Rotation.from_rotvec(jnp.array([0.0, 0.0, np.pi / 2])).as_mrp()
        Array([0.        , 0.        , 0.41421354], dtype=float32)
        """
        q = self.quat
        sign = jnp.where(q[..., 3:] < 0, -1.0, 1.0)
        return sign * q[..., :3] / (1 + sign * q[..., 3:])

    def as_rotvec(self, degrees: bool = False):
        """The rotation vectors (axis times angle, the angle in ``[0, pi]``).

        >>> Rotation.from_euler("x", 30, degrees=True).as_rotvec(degrees=True).round(3)
        Array([30.,  0.,  0.], dtype=float32)
        """
        return _as_rotvec(self.quat, degrees)

    def as_quat(self, canonical: bool = False, scalar_first: bool = False):
        """The quaternions (``canonical``: the one of ``q`` and ``-q`` with ``w >= 0``).

        >>> Rotation.from_quat(jnp.array([0.0, 0.0, 0.0, -1.0])).as_quat(canonical=True)
        Array([-0., -0., -0.,  1.], dtype=float32)
        """
        quat = _canonical(self.quat) if canonical else self.quat
        return jnp.roll(quat, 1, axis=-1) if scalar_first else quat

    def inv(self):
        """The inverse rotation(s).

        >>> Rotation.from_rotvec(jnp.array([0.0, 0.5, 0.0])).inv().as_rotvec()[1]
        Array(-0.5, dtype=float32)
        """
        return Rotation(self.quat * jnp.array([-1, -1, -1, 1], dtype=self.quat.dtype))

    def magnitude(self):
        """The rotation angle(s), in ``[0, pi]``.

        >>> Rotation.from_rotvec(jnp.array([0.3, 0.0, 0.4])).magnitude()
        Array(0.5, dtype=float32)
        """
        return 2 * jnp.arctan2(_norm(self.quat[..., :3]), jnp.abs(self.quat[..., 3]))

    def mean(self, weights=None):
        """The (weighted) mean rotation of a stack: the dominant eigenvector of the weighted
        sum of the quaternions' outer products (SciPy's definition).

        >>> Rotation.from_euler("z", [0.0, 60.0], degrees=True).mean().magnitude().round(4)
        Array(0.5236, dtype=float32)
        """
        q = self.quat
        w = jnp.ones(q.shape[0], q.dtype) if weights is None else jnp.asarray(weights, q.dtype)
        if w.ndim != 1:
            raise ValueError(f"Expected `weights` to be 1 dimensional, got shape {w.shape}.")
        if w.shape[0] != len(self):
            raise ValueError(f"Expected `weights` to have number of values equal to number of "
                             f"rotations, got {w.shape[0]} values and {len(self)} rotations.")
        _, v = jnp_linalg.eigh((w[None, :] * q.T) @ q)
        return Rotation(v[:, -1])

    @property
    def single(self) -> bool:
        """Whether this holds one rotation (not a stack)."""
        return self.quat.ndim == 1


class Slerp(typing.NamedTuple):
    """Spherical linear interpolation between key rotations at increasing ``times``
    (SciPy's ``scipy.spatial.transform.Slerp``; build one with ``Slerp.init``).

    >>> keys = Rotation.from_euler("z", [0.0, 90.0], degrees=True)
    >>> Slerp.init([0.0, 1.0], keys)(0.5).as_rotvec(degrees=True).round(3)
    Array([ 0.,  0., 45.], dtype=float32)
    """
    times: typing.Any
    timedelta: typing.Any
    rotations: Rotation
    rotvecs: typing.Any

    @classmethod
    def init(cls, times, rotations: Rotation):
        """The interpolator through ``rotations`` (at least 2) at ``times``.

        >>> s = Slerp.init([0.0, 2.0], Rotation.from_rotvec(jnp.array([[0.0, 0, 0], [0, 0, 1]])))
        >>> s(jnp.array([0.5, 1.0])).magnitude()
        Array([0.25, 0.5 ], dtype=float32)
        """
        if not isinstance(rotations, Rotation):
            raise TypeError("`rotations` must be a `Rotation` instance.")
        if rotations.single or len(rotations) == 1:
            raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
        times = jnp.asarray(times, dtype=rotations.quat.dtype)
        if times.ndim != 1:
            raise ValueError(f"Expected times to be specified in a 1 dimensional array, got "
                             f"{times.ndim} dimensions.")
        if times.shape[0] != len(rotations):
            raise ValueError(f"Expected number of rotations to be equal to number of timestamps "
                             f"given, got {len(rotations)} rotations and {times.shape[0]} "
                             f"timestamps.")
        starts, ends = Rotation(rotations.quat[:-1]), Rotation(rotations.quat[1:])
        return cls(times=times, timedelta=jnp.diff(times), rotations=starts,
                   rotvecs=(starts.inv() * ends).as_rotvec())

    def __call__(self, times):
        """The interpolated rotation(s) at ``times`` (a scalar or a 1-d array)."""
        t = jnp.asarray(times, dtype=self.times.dtype)
        if t.ndim > 1:
            raise ValueError("`times` must be at most 1-dimensional.")
        single = t.ndim == 0
        t = jnp.atleast_1d(t)
        ind = jnp.maximum(jnp.searchsorted(self.times, t) - 1, 0)
        alpha = (t - self.times[ind]) / self.timedelta[ind]
        result = self.rotations[ind] * Rotation.from_rotvec(self.rotvecs[ind] * alpha[:, None])
        return result[0] if single else result
