"""JSON objects read strictly: a key given twice is an error, not silently the last one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from collkit.errors import CollkitError

Pairs = list[tuple[str, Any]]


def unique_keys(error: type[CollkitError]) -> Callable[[Pairs], dict[str, Any]]:
    """An object_pairs_hook for json.loads that raises `error` on a duplicate key."""

    def hook(pairs: Pairs) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise error(f"JSON object has the key {key!r} twice")
            out[key] = value
        return out

    return hook
