"""``optax._src.linesearch``: line searches
(re-exported from fnx.optim)."""
from .. import (
    BacktrackingLinesearchInfo, ScaleByBacktrackingLinesearchState,
    ScaleByZoomLinesearchState, ZoomLinesearchInfo, scale_by_backtracking_linesearch,
    scale_by_zoom_linesearch, value_and_grad_from_state,
)

__all__ = [
    'BacktrackingLinesearchInfo', 'ScaleByBacktrackingLinesearchState',
    'ScaleByZoomLinesearchState', 'ZoomLinesearchInfo', 'scale_by_backtracking_linesearch',
    'scale_by_zoom_linesearch', 'value_and_grad_from_state',
]
