"""KServe's ``LLMInferenceService`` (and ``LLMInferenceServiceConfig``): the router
configuration under ``spec.router.scheduler``.

KServe (``serving.kserve.io/v1alpha1`` and ``v1alpha2``) deploys llm-d's router from this
object and takes its ``EndpointPickerConfig`` from one of three places:

- ``spec.router.scheduler.config.inline``: the document itself (an object, or YAML text);
- ``spec.router.scheduler.config.ref``: a ConfigMap key (``name``, ``key``);
- the scheduler's container arguments in ``spec.router.scheduler.template.containers[].args``:
  ``--config-text`` followed by the document as text (or ``--config-text=...``), or
  ``--config-file PATH``.

Only the first and the third's ``--config-text`` are in the file; a ConfigMap or a file path
cannot be followed from here, so such a document is valid with a note, and the router asks for
the referenced document as its own ``--config`` file. Everything else in the object (model,
replicas, Gateway routes, pool) belongs to KServe's controller. Errors name the field, inside
the embedded document too (``spec.router.scheduler.config.inline.flowControl.maxRequests``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import Field

from sluiceway.config.documents import parse_documents
from sluiceway.config.router import EndpointPickerConfig, load_endpoint_picker_config
from sluiceway.config.strict import CamelModel, Loaded, LooseCamelModel, join_path, validate_model
from sluiceway.errors import ConfigError

__all__ = [
    "LLM_INFERENCE_SERVICE_KINDS",
    "SchedulerPickerConfig",
    "is_llm_inference_service",
    "load_llm_inference_service",
]

LLM_INFERENCE_SERVICE_KINDS: Final = ("LLMInferenceService", "LLMInferenceServiceConfig")
_GROUP: Final = "serving.kserve.io/"
_SCHEDULER: Final = "spec.router.scheduler"
_TEXT_FLAG: Final = "--config-text"
_FILE_FLAG: Final = "--config-file"


class _ConfigMapKey(LooseCamelModel):
    name: str = ""
    key: str


class _SchedulerConfig(CamelModel):
    inline: Any = None
    ref: _ConfigMapKey | None = None


class _Container(LooseCamelModel):
    name: str = ""
    args: list[str] = Field(default_factory=list)


class _PodSpec(LooseCamelModel):
    containers: list[_Container] = Field(default_factory=list)


class _Scheduler(LooseCamelModel):
    config: _SchedulerConfig | None = None
    template: _PodSpec | None = None


class _Router(LooseCamelModel):
    scheduler: _Scheduler | None = None


class _Spec(LooseCamelModel):
    router: _Router | None = None
    base_refs: list[dict[str, Any]] = Field(default_factory=list)


class _Service(LooseCamelModel):
    api_version: str
    kind: Literal["LLMInferenceService", "LLMInferenceServiceConfig"]
    spec: _Spec = Field(default_factory=_Spec)


@dataclass(frozen=True, slots=True)
class SchedulerPickerConfig:
    """What the object says of its EndpointPickerConfig: the document (``config``) found at
    ``field``; or, when it is kept elsewhere, ``reference`` (a ConfigMap key, a file in the
    scheduler's container) named at ``field``; or neither (KServe's default configuration)."""

    config: EndpointPickerConfig | None
    field: str = _SCHEDULER
    reference: str | None = None

    def missing(self) -> str:
        """Why there is no document here (for a note or an error)."""
        if self.reference is not None:
            return f"the EndpointPickerConfig is in {self.reference}, which a file cannot reach"
        return "no EndpointPickerConfig here: KServe's default configuration applies"


def is_llm_inference_service(doc: Any) -> bool:
    return isinstance(doc, Mapping) and doc.get("kind") in LLM_INFERENCE_SERVICE_KINDS


@dataclass(frozen=True, slots=True)
class _Found:
    field: str
    text: Any = None  # the document (object or YAML text) when it is here
    reference: str | None = None


def _in_args(container: _Container, where: str) -> list[_Found]:
    found = []
    args = container.args
    for index, arg in enumerate(args):
        flag, eq, value = arg.partition("=")
        if flag not in (_TEXT_FLAG, _FILE_FLAG):
            continue
        at = join_path(where, "args", index)
        if not eq:
            if index + 1 >= len(args):
                raise ConfigError(f"{flag} needs a value", field=at)
            value, at = args[index + 1], join_path(where, "args", index + 1)
        if flag == _TEXT_FLAG:
            found.append(_Found(at, text=value))
        else:
            found.append(_Found(at, reference=f"the file {value} of the scheduler's container"))
    return found


def _candidates(scheduler: _Scheduler) -> list[_Found]:
    where = join_path(_SCHEDULER, "config")
    found = []
    if scheduler.config is not None and scheduler.config.inline is not None:
        found.append(_Found(join_path(where, "inline"), text=scheduler.config.inline))
    if scheduler.config is not None and scheduler.config.ref is not None:
        ref = scheduler.config.ref
        found.append(
            _Found(join_path(where, "ref"), reference=f"ConfigMap {ref.name!r} key {ref.key!r}")
        )
    for index, container in enumerate(scheduler.template.containers if scheduler.template else []):
        found += _in_args(container, join_path(_SCHEDULER, "template", "containers", index))
    return found


def _picker(found: _Found, path: str) -> Loaded[EndpointPickerConfig]:
    where = join_path(path, found.field)
    text = found.text
    docs = parse_documents(text, source=where) if isinstance(text, str) else [text]
    if len(docs) != 1:
        raise ConfigError("expected one EndpointPickerConfig document", field=where)
    return load_endpoint_picker_config(docs[0], path=where)


def load_llm_inference_service(doc: Any, *, path: str = "") -> Loaded[SchedulerPickerConfig]:
    """The EndpointPickerConfig of an LLMInferenceService document, validated; ConfigError
    names the field (in the document or the one embedded in it)."""
    service = validate_model(_Service, doc, path=path).value
    if not service.api_version.startswith(_GROUP):
        raise ConfigError(
            f"{service.api_version!r} is not a serving.kserve.io version",
            field=join_path(path, "apiVersion"),
        )
    router = service.spec.router
    scheduler = router.scheduler if router is not None else None
    found = _candidates(scheduler) if scheduler is not None else []
    if len(found) > 1:
        raise ConfigError(
            f"the EndpointPickerConfig is given twice (also at {found[0].field})",
            field=join_path(path, found[1].field),
        )
    if not found:
        result = SchedulerPickerConfig(None, join_path(path, _SCHEDULER))
        notes = [f"{result.field}: {result.missing()}"]
        if service.spec.base_refs:
            notes.append(
                f"{join_path(path, 'spec.baseRefs')}: a configuration in a base "
                "LLMInferenceServiceConfig is not followed (check that document itself)"
            )
        return Loaded(result, tuple(notes))
    (one,) = found
    if one.reference is not None:
        result = SchedulerPickerConfig(None, join_path(path, one.field), one.reference)
        return Loaded(result, (f"{result.field}: {result.missing()}; not checked",))
    loaded = _picker(one, path)
    return Loaded(SchedulerPickerConfig(loaded.value, join_path(path, one.field)), loaded.warnings)
