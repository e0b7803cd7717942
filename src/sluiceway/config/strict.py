"""Shared machinery of the configuration models: strict models, notes, error paths.

Strictness follows docs/design-rules.md rule 6: unknown keys are errors naming the dotted path; keys
a model lists in ``COSMETIC`` are accepted with a warning; a model's ``check`` hook raises
:class:`~sluiceway.errors.UnsupportedError` for known keys whose behaviour we lack.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from sluiceway.errors import ConfigError

__all__ = [
    "CamelModel",
    "Loaded",
    "LooseCamelModel",
    "StrictModel",
    "collect_warnings",
    "config_error",
    "join_path",
    "validate_model",
]

M = TypeVar("M")
B = TypeVar("B", bound=BaseModel)


class StrictModel(BaseModel):
    """Frozen model that rejects unknown keys.

    ``COSMETIC`` names known keys (by their document spelling) that change nothing here: each
    one set gives a warning. Override :meth:`check` for further warnings or unsupported values.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    COSMETIC: ClassVar[frozenset[str]] = frozenset()

    def check(self, path: str) -> list[str]:
        """Warnings about this model alone; raise ConfigError for unsupported settings."""
        return []


class CamelModel(StrictModel):
    """A StrictModel whose document keys are camelCase (Kubernetes style)."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, alias_generator=to_camel
    )


class LooseCamelModel(CamelModel):
    """A CamelModel that keeps unknown keys: for documents (Helm values, Kubernetes objects)
    of which only a few fields are ours to read, the rest belonging to a chart or controller."""

    model_config = ConfigDict(
        extra="allow", frozen=True, populate_by_name=True, alias_generator=to_camel
    )


@dataclass(frozen=True, slots=True)
class Loaded(Generic[M]):
    """A loaded document and the warnings found while loading it."""

    value: M
    warnings: tuple[str, ...] = ()


def join_path(prefix: str, *parts: str | int) -> str:
    """Dotted path with list indices in brackets: ``ap.workerPools[0].gate_params``."""
    path = prefix
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path = f"{path}.{part}" if path else str(part)
    return path


def _describe(error: Mapping[str, Any]) -> str:
    if error["type"] == "extra_forbidden":
        return "unknown key"
    if error["type"] == "missing":
        return "required key missing"
    return str(error["msg"])


def config_error(exc: ValidationError, prefix: str = "") -> ConfigError:
    """The first validation error as a ConfigError naming its dotted path; others in the text."""
    errors = exc.errors()
    first = errors[0]
    field = join_path(prefix, *first["loc"]) or None
    message = _describe(first)
    others = [f"{join_path(prefix, *e['loc'])}: {_describe(e)}" for e in errors[1:4]]
    if others:
        message += " (also: " + "; ".join(others) + ")"
    return ConfigError(message, field=field)


def _alias(model: BaseModel, name: str) -> str | None:
    info = type(model).model_fields.get(name)
    if info is None:  # an extra key of a loose (extra="allow") model: not ours to walk
        return None
    return info.alias or name


def _children(value: Any, path: str) -> Iterable[tuple[Any, str]]:
    if isinstance(value, BaseModel):
        yield value, path
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _children(item, join_path(path, str(key)))
    elif isinstance(value, Sequence) and not isinstance(value, str | bytes):
        for index, item in enumerate(value):
            yield from _children(item, join_path(path, index))


def collect_warnings(model: BaseModel, path: str = "") -> list[str]:
    """Walk a validated model tree: cosmetic-key warnings and each model's ``check``."""
    warnings: list[str] = []
    cosmetic = model.COSMETIC if isinstance(model, StrictModel) else frozenset()
    for name in sorted(model.model_fields_set):
        key = _alias(model, name)
        if key is None:
            continue
        if key in cosmetic:
            warnings.append(f"{join_path(path, key)}: accepted and ignored (no effect here)")
        for child, child_path in _children(getattr(model, name), join_path(path, key)):
            warnings.extend(collect_warnings(child, child_path))
    if isinstance(model, StrictModel):
        warnings.extend(model.check(path))
    return warnings


def validate_model(cls: type[B], data: Any, *, path: str = "") -> Loaded[B]:
    """Validate ``data`` as ``cls``; ConfigError names the bad field under ``path``."""
    try:
        model = cls.model_validate(data)
    except ValidationError as exc:
        raise config_error(exc, path) from None
    return Loaded(model, tuple(collect_warnings(model, path)))
