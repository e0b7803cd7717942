"""The processor's start-up lines: broker (masked), queues, pools."""

from __future__ import annotations

from sluiceway.config.processor_settings import load_processor_settings
from sluiceway.config.summary import describe_processor


def test_start_up_lines_name_broker_queues_and_pools_without_the_password() -> None:
    config = (
        '{"url": "redis://app:s3cret@redis:6379/0", "queues": [{"queue_name": "team-a", '
        '"igw_base_url": "http://router:80", "labels": {"tier": "async"}}]}'
    )
    settings = load_processor_settings(
        transport="redis-sortedset", transport_config=config, env={}
    ).value
    lines = describe_processor(settings)
    assert lines == [
        "broker: redis-sortedset redis://app:***@redis:6379/0",
        "queue team-a: pool default, tier async, upstream http://router:80/v1/completions",
        "pool default: 64 workers",
    ]
    assert not any("s3cret" in line for line in lines)
