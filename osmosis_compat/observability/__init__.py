"""Telemetry that leaves the process, behind the optional ``opentelemetry`` extra (imported only when enabled)."""
