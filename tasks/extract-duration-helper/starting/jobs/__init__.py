"""Periodic jobs and retry policies."""
