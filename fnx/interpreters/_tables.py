"""A rule table keyed by primitive that reads and writes one rule slot of the primitive."""
from __future__ import annotations

from collections.abc import MutableMapping


class RuleTable(MutableMapping):
    """``table[p] = rule`` sets ``p.<slot>`` (fnx's rules take the arguments JAX's do);
    ``p in table`` says whether ``p`` has one.

    >>> table = RuleTable("transpose")
    >>> fnx.lax.neg_p in table, fnx.lax.sin_p in table
    (True, False)
    """

    def __init__(self, slot: str):
        self.slot = slot
        self._registered: list = []     # what was registered through the table, to iterate

    def __setitem__(self, primitive, rule):
        setattr(primitive, self.slot, rule)
        if primitive not in self._registered:
            self._registered.append(primitive)

    def __getitem__(self, primitive):
        rule = getattr(primitive, self.slot, None)
        if rule is None:
            raise KeyError(primitive)
        return rule

    def __delitem__(self, primitive):
        setattr(primitive, self.slot, None)
        if primitive in self._registered:
            self._registered.remove(primitive)

    def __iter__(self):
        return iter(list(self._registered))

    def __len__(self):
        return len(self._registered)

    def __contains__(self, primitive):
        return getattr(primitive, self.slot, None) is not None
