"""Redis-backed gates get Redis only through the context's backend service."""

from __future__ import annotations

import pytest

from sluiceway.errors import ConfigError
from sluiceway.gates.context import REDIS_GATES_SERVICE
from sluiceway.gates.redis_backend import redis_backend

from .hub import context


def test_missing_backend_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'redis' needs Redis access"):
        redis_backend(context(), "redis")


def test_backend_comes_from_the_services() -> None:
    backend = object()
    assert redis_backend(context(**{REDIS_GATES_SERVICE: backend}), "redis") is backend
