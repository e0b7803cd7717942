"""The router's start-up note about the chart values' model server labels."""

from __future__ import annotations

from sluiceway.router.command import _chart_labels_note

LABELS = {"llm-d.ai/guide": "async-multitenant", "app": "vllm"}
UNUSED = ["router.modelServers.matchLabels is not used: endpoints come from flags"]


def test_other_endpoints_leave_the_labels_unused_and_say_so() -> None:
    assert _chart_labels_note(LABELS, True, None) == UNUSED
    assert _chart_labels_note(LABELS, True, "app=other") == UNUSED


def test_a_selector_naming_the_same_labels_is_the_chart_and_no_note() -> None:
    """The Helm chart passes the values' labels as --pod-selector (in any order)."""
    assert _chart_labels_note(LABELS, True, "app=vllm,llm-d.ai/guide=async-multitenant") == []


def test_no_labels_or_no_flag_means_no_note() -> None:
    assert _chart_labels_note({}, True, "app=vllm") == []
    assert _chart_labels_note(LABELS, False, None) == []
