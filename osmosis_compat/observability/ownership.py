"""osmosis-ai 0.3.8's OTLP "rollout.ownership" log records: which server owns a rollout, for the platform.

With ``OSMOSIS_ROLLOUT_OTLP_ENDPOINT`` set, every polling rollout (any kind of agent: legacy loop or workflow)
sends one OTLP log record per status it reaches — ``queued`` at admission, each change the run reports
(``running``, ``grading``), and its terminal status (``success``, ``failure``, ``cancelled``, including lease
expiry and cancel) — as 0.3.8's server does, to ``<endpoint>/v1/logs`` over OTLP/HTTP:

- resource ``service.name = "osmosis-rollout-server"``; body ``"Rollout ownership"``; severity text ``INFO``;
- attributes ``event = "rollout.ownership"``, ``rollout_id``, ``server_id`` (``OSMOSIS_ROLLOUT_SERVER_ID``, else
  ``_OSMOSIS_ROLLOUT_INSTANCE_ID``, else the host name), ``server_name`` (``_OSMOSIS_ROLLOUT_NAME``),
  ``namespace`` (``OSMOSIS_ROLLOUT_NAMESPACE``), ``run_id`` / ``run_name`` from the request's
  ``metadata.osmosis_observability``, ``status`` and ``event_sequence`` (1, 2, … per server); empty values, text
  over 512 characters or with control characters are left out, and a rollout id that is not such text gets no
  records at all — never any rollout input or secret;
- batched (1,024 queued at most, 128 per export, every second, 2 s per request, 3 s per export) and flushed when
  the server stops; a failure to record never affects admission, leases or results.

Needs ``pip install 'osmosis-compat[opentelemetry]'``; without the endpoint nothing is imported.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any, Optional

__all__ = ["METADATA_KEY", "RolloutOwnership"]

logger = logging.getLogger(__name__)

METADATA_KEY = "osmosis_observability"
ENDPOINT_ENV = "OSMOSIS_ROLLOUT_OTLP_ENDPOINT"


def _text(value: object) -> Optional[str]:
    # Explicit text only, bounded, without control characters (0.3.8's rule).
    if not isinstance(value, str) or not value.strip() or len(value) > 512 or not value.isprintable():
        return None
    return value


class RolloutOwnership:
    """The ownership records of one server (see the module docstring). :meth:`start` reads the endpoint and
    builds the exporter (a provider of its own: an application's global one is left alone)."""

    def __init__(self) -> None:
        owner = {
            "server_id": os.environ.get("OSMOSIS_ROLLOUT_SERVER_ID")
            or os.environ.get("_OSMOSIS_ROLLOUT_INSTANCE_ID")
            or socket.gethostname(),
            "server_name": os.environ.get("_OSMOSIS_ROLLOUT_NAME", ""),
            "namespace": os.environ.get("OSMOSIS_ROLLOUT_NAMESPACE", ""),
        }
        self.owner = {key: value for key, value in owner.items() if _text(value) is not None}
        self.provider: Any = None
        self.log: Any = None
        self._sequence = 0
        self._lock = threading.Lock()
        self._fields: dict[str, dict[str, str]] = {}

    @property
    def enabled(self) -> bool:
        return self.log is not None

    def start(self) -> None:
        """Build the OTLP/HTTP log exporter when ``OSMOSIS_ROLLOUT_OTLP_ENDPOINT`` is set (else do nothing).

        Raises ``ImportError`` naming the extra when the OpenTelemetry packages are missing: an operator who set
        the endpoint wants the records, so silence would be wrong.
        """
        endpoint = os.environ.get(ENDPOINT_ENV, "").rstrip("/")
        if not endpoint or self.provider is not None:
            return
        try:
            from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
            from opentelemetry.sdk._logs import LoggerProvider
            from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
            from opentelemetry.sdk.resources import Resource
        except ImportError as exc:
            raise ImportError(f"{ENDPOINT_ENV} is set but the OpenTelemetry packages are missing: "
                              "pip install 'osmosis-compat[opentelemetry]'") from exc
        self.provider = LoggerProvider(resource=Resource({"service.name": "osmosis-rollout-server"}))
        self.provider.add_log_record_processor(BatchLogRecordProcessor(
            OTLPLogExporter(endpoint=f"{endpoint}/v1/logs", timeout=2),
            max_queue_size=1024, max_export_batch_size=128, schedule_delay_millis=1000, export_timeout_millis=3000,
        ))
        self.log = self.provider.get_logger("osmosis_ai.rollout.server.observability")

    def admitted(self, rollout_id: str, metadata: Optional[Mapping[str, Any]]) -> None:
        """A rollout was admitted: remember its fields and record ``queued``."""
        if self.log is None:
            return
        fields = self._fields_for(rollout_id, metadata)
        if fields is not None:
            self._fields[rollout_id] = fields
            self._emit(fields, "queued")

    def status(self, rollout_id: str, status: str, *, final: bool = False) -> None:
        """Record ``status`` for an admitted rollout (``final``: its last record; the fields are dropped)."""
        fields = self._fields.pop(rollout_id, None) if final else self._fields.get(rollout_id)
        if fields is not None:
            self._emit(fields, status)

    def _fields_for(self, rollout_id: str, metadata: Optional[Mapping[str, Any]]) -> Optional[dict[str, str]]:
        # An id that is not clean text cannot be truncated or dropped without merging unrelated owners downstream.
        if _text(rollout_id) is None or "server_id" not in self.owner:
            return None
        fields = {"event": "rollout.ownership", "rollout_id": rollout_id, **self.owner}
        supplied = (metadata or {}).get(METADATA_KEY)
        if isinstance(supplied, dict):
            for key in ("run_id", "run_name"):
                value = _text(supplied.get(key))
                if value:
                    fields[key] = value
        return fields

    def _emit(self, fields: Mapping[str, str], status: str) -> None:
        try:
            with self._lock:
                self._sequence += 1
                sequence = self._sequence
            self.log.emit(timestamp=time.time_ns(), severity_text="INFO", body="Rollout ownership",
                          attributes={**fields, "status": str(status), "event_sequence": sequence})
        except Exception:  # observability must never affect admission, leases or results
            logger.warning("Could not record rollout ownership", exc_info=False)

    def close(self) -> None:
        """Flush what is queued (3 s at most) and stop the exporter."""
        if self.provider is not None:
            try:
                self.provider.force_flush(timeout_millis=3000)
                self.provider.shutdown()
            finally:
                self.provider = self.log = None
