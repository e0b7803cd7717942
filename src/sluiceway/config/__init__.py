"""Configuration documents: pydantic models and loaders accepting the upstream formats.

Processor: :func:`load_processor_settings` takes the processor's flags (``transport``,
``transport_config`` inline JSON, ``transport_config_file``, ``pool_config_file``,
``request_merge_policy_config_file``, ``config_file`` = the Helm values shape, ``overrides`` for
scalar flags) and returns ``Loaded[ProcessorSettings]``: ``.value`` is a frozen
:class:`ProcessorSettings` (``transport``, ``transport_config``: :class:`TransportConfig` whose
``all_queues`` are :class:`QueueConfig`, ``pools``: :class:`PoolConfig` tuple always holding
every pool a queue names, ``merge_policy``: :class:`MergePolicyConfig`, durations in seconds);
``.warnings`` lists ignored or not-yet-implemented settings. Errors are
:class:`~sluiceway.errors.ConfigError` with ``field`` = the dotted path at fault.

Router: :func:`load_endpoint_picker_config`, :func:`load_objectives`. Coordinator:
:func:`load_coordinator_config`. Gate and plugin names: :mod:`sluiceway.config.registry`.
Parameter field types for implementers: :mod:`sluiceway.config.params`.

Files:

- ``strict``: strict models, notes and error paths shared by every model; ``documents``: reading
  JSON or YAML files, one document or several; ``quantities``: Kubernetes quantities and Go
  durations; ``urls``: address checks shared by config files and flags; ``redis_address``: the
  one Redis address form of every command (TLS files, Sentinel, their credentials);
- processor: ``processor`` (transport, pool and merge-policy documents in llm-d-async's formats),
  ``helm`` (the llm-d-async chart's values shape, for ``--config``), ``flags`` (upstream flags
  not taken as they are), ``processor_settings`` (everything the processor starts from, each
  scalar setting declared once), ``summary`` (what a processor is about to run, in a few log
  lines);
- gates and plugins: ``gates`` (gate configurations in queues, pools and combinators),
  ``gate_params`` (every gate type's parameter model and the table of gate type names),
  ``flow_plugins`` (the router's flow-control plugin parameters), ``scorer_plugins`` (the
  picker's scorer parameters), ``params`` (field types following upstream's parsing rules),
  ``registry`` (the one registry of gate and plugin type names);
- router: ``router`` (the ``EndpointPickerConfig`` YAML), ``router_values`` (the router chart's
  Helm values as the guide ships them), ``llm_inference_service`` (KServe's
  ``LLMInferenceService``, the configuration under ``spec.router.scheduler``), ``objectives``
  (``InferenceObjective`` documents);
- ``coordinator``: the coordinator's config file;
- ``kinds``: which document a file holds; ``command``: ``sluiceway check-config FILE``.
"""

from __future__ import annotations

from sluiceway.config.coordinator import (
    AsyncBrokerParams,
    CoordinatorConfig,
    load_coordinator_config,
)
from sluiceway.config.documents import parse_documents, read_document, read_documents
from sluiceway.config.gates import check_gate, gate_types_in
from sluiceway.config.kinds import KINDS, check_file, detect_kind
from sluiceway.config.objectives import InferenceObjective, load_objectives
from sluiceway.config.processor import (
    DEFAULT_POOL_ID,
    TRANSPORTS,
    MergePolicyConfig,
    MergePolicyParams,
    PoolConfig,
    QueueConfig,
    TransportConfig,
    load_merge_policy,
    load_pools,
    load_transport_config,
)
from sluiceway.config.processor_settings import ProcessorSettings, load_processor_settings
from sluiceway.config.quantities import parse_duration, parse_quantity
from sluiceway.config.registry import (
    GATE_TYPES,
    IMPLEMENTED,
    PLUGIN_TYPES,
    params_model,
    require_implemented,
    validate_params,
)
from sluiceway.config.router import (
    EndpointPickerConfig,
    FlowControlConfig,
    PluginSpec,
    PriorityBandConfig,
    load_endpoint_picker_config,
)
from sluiceway.config.strict import Loaded, StrictModel

__all__ = [
    "DEFAULT_POOL_ID",
    "GATE_TYPES",
    "IMPLEMENTED",
    "KINDS",
    "PLUGIN_TYPES",
    "TRANSPORTS",
    "AsyncBrokerParams",
    "CoordinatorConfig",
    "EndpointPickerConfig",
    "FlowControlConfig",
    "InferenceObjective",
    "Loaded",
    "MergePolicyConfig",
    "MergePolicyParams",
    "PluginSpec",
    "PoolConfig",
    "PriorityBandConfig",
    "ProcessorSettings",
    "QueueConfig",
    "StrictModel",
    "TransportConfig",
    "check_file",
    "check_gate",
    "detect_kind",
    "gate_types_in",
    "load_coordinator_config",
    "load_endpoint_picker_config",
    "load_merge_policy",
    "load_objectives",
    "load_pools",
    "load_processor_settings",
    "load_transport_config",
    "params_model",
    "parse_documents",
    "parse_duration",
    "parse_quantity",
    "read_document",
    "read_documents",
    "require_implemented",
    "validate_params",
]
