"""Metric names, collectors and logging shared by every component.

- ``names``: every metric name other systems read, defined once;
- ``tally``: counters and histograms in plain Python numbers, exported at scrape time;
- ``logging``: process logging, text or JSON lines, and quiet broker outages.
"""
