"""``optax._src.linesearch``: line searches
(re-exported from fnx.optim)."""
from .. import (
    BacktrackingLinesearchInfo, ScaleByBacktrackingLinesearchState,
    ScaleByZoomLinesearchState, ZoomLinesearchInfo, scale_by_backtracking_linesearch,
    scale_by_zoom_linesearch, value_and_grad_from_state,
)
from .._linesearch import BacktrackingLineSearchState, ZoomLinesearchState, zoom_linesearch

__all__ = [
    'BacktrackingLineSearchState', 'BacktrackingLinesearchInfo',
    'ScaleByBacktrackingLinesearchState', 'ScaleByZoomLinesearchState', 'ZoomLinesearchInfo',
    'ZoomLinesearchState', 'scale_by_backtracking_linesearch', 'scale_by_zoom_linesearch',
    'value_and_grad_from_state', 'zoom_linesearch',
]
