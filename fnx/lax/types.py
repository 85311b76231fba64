"""jax.lax's parameter types: dimension numbers, modes and enums, with JAX's names, fields and
members, so code that builds them ports unchanged.

>>> dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
...                                 start_index_map=(0,))
>>> dn.operand_batching_dims
()
>>> lax.GatherScatterMode.from_any("clip")
<GatherScatterMode.CLIP: 1>
"""
from __future__ import annotations

import dataclasses
import enum
from typing import Any, NamedTuple, Optional, Sequence, Tuple, Union

from ..core.convolution import ConvDimensionNumbers
from ..core.lax import Precision


class GatherDimensionNumbers(NamedTuple):
    """Which axes of a gather's output are slice offsets, which slice axes are dropped, and which
    operand axis each index column addresses (XLA's gather dimension numbers).

    >>> lax.GatherDimensionNumbers((1,), (0,), (0,)).start_index_map
    (0,)
    """
    offset_dims: Tuple[int, ...]
    collapsed_slice_dims: Tuple[int, ...]
    start_index_map: Tuple[int, ...]
    operand_batching_dims: Tuple[int, ...] = ()
    start_indices_batching_dims: Tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """Which axes of a scatter's updates are window axes, which operand axes the window omits, and
    which operand axis each index column addresses (XLA's scatter dimension numbers).

    >>> lax.ScatterDimensionNumbers((), (0,), (0,)).inserted_window_dims
    (0,)
    """
    update_window_dims: Sequence[int]
    inserted_window_dims: Sequence[int]
    scatter_dims_to_operand_dims: Sequence[int]
    operand_batching_dims: Sequence[int] = ()
    scatter_indices_batching_dims: Sequence[int] = ()


class GatherScatterMode(enum.Enum):
    """What a gather or scatter does with an out-of-bounds window: clamp it (CLIP), fill or drop
    it (FILL_OR_DROP), or trust the caller (PROMISE_IN_BOUNDS, treated as CLIP).

    >>> lax.GatherScatterMode.from_any(None)
    <GatherScatterMode.FILL_OR_DROP: 2>
    """
    CLIP = 1
    FILL_OR_DROP = 2
    PROMISE_IN_BOUNDS = 3
    ONE_HOT = 4

    @staticmethod
    def from_any(s: Optional[Union[str, "GatherScatterMode"]]) -> "GatherScatterMode":
        if isinstance(s, GatherScatterMode):
            return s
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "clip":
            return GatherScatterMode.CLIP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        if s == "one_hot":
            return GatherScatterMode.ONE_HOT
        raise ValueError(f"Unknown gather mode {s!r}")


class RoundingMethod(enum.IntEnum):
    """How ``lax.round`` breaks ties: away from zero (0) or to the nearest even (1).

    >>> int(lax.RoundingMethod.TO_NEAREST_EVEN)
    1
    """
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):  # noqa: A001 (jax.lax's name)
    """``x`` rounded to the nearest whole number, ties away from zero, or to the even one with
    ``rounding_method=RoundingMethod.TO_NEAREST_EVEN``.

    >>> lax.round(jnp.array([0.5, 1.5, 2.5]))
    Array([1., 2., 3.], dtype=float32)
    """
    from ..core import lax
    if RoundingMethod(int(rounding_method)) == RoundingMethod.TO_NEAREST_EVEN:
        return lax.round_half_even(x)
    return lax.round_(x)


class RandomAlgorithm(enum.IntEnum):
    """The bit generator ``rng_bit_generator`` is asked for.

    >>> lax.RandomAlgorithm.RNG_THREE_FRY.name
    'RNG_THREE_FRY'
    """
    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2


class AccuracyMode(enum.Enum):
    """The accuracy a transcendental function is asked for (JAX's ``AccuracyMode``).

    >>> lax.AccuracyMode.HIGHEST.value
    1
    """
    HIGHEST = 1
    DEFAULT = 2


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """Error bounds a transcendental function may be asked to meet.

    >>> lax.Tolerance(atol=1e-6).rtol
    0.0
    """
    atol: float = 0.0
    rtol: float = 0.0
    ulps: int = 0


class DotAlgorithm(NamedTuple):
    """Input, accumulation types and pass counts for a product. fnx's CPU products accumulate
    in the result type whatever is asked; the parameter is accepted for portability.

    >>> lax.DotAlgorithm(np.float32, np.float32, np.float32).num_primitive_operations
    1
    """
    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
    """Named product algorithms (JAX's presets: operand, operand and accumulation types).

    >>> lax.DotAlgorithmPreset.F32_F32_F32.name
    'F32_F32_F32'
    """
    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __repr__(self) -> str:
        return f"DotAlgorithmPreset.{self.name}"


class RaggedDotDimensionNumbers(NamedTuple):
    """Dimension numbers of ``ragged_dot_general``: the dot's own, the ragged lhs axes and the
    rhs group axes.

    >>> lax.RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), [0], [0]).rhs_group_dimensions
    [0]
    """
    dot_dimension_numbers: Any
    lhs_ragged_dimensions: Sequence[int]
    rhs_group_dimensions: Sequence[int]


# the type aliases JAX exports for annotations
DotDimensionNumbers = Tuple[Tuple[Sequence[int], Sequence[int]],
                            Tuple[Sequence[int], Sequence[int]]]
ConvGeneralDilatedDimensionNumbers = Union[Tuple[str, str, str], ConvDimensionNumbers, None]
PrecisionLike = Union[None, str, Precision, Tuple[str, str], Tuple[Precision, Precision],
                      DotAlgorithm, DotAlgorithmPreset]
