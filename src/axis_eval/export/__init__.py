"""Finished reports in the formats other tools read: OpenTelemetry traces (GenAI semantic
conventions, OTLP/JSON or OTLP/HTTP) and Inspect AI eval logs (``axis export``)."""
