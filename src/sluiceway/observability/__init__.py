"""Metric names, collectors and logging shared by every component."""
