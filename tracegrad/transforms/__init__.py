"""Transforms: functions from graphs to graphs (vjp, and more to come)."""
