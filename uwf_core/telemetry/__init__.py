"""OpenTelemetry traces of threads: spans recorded by a step, exported when it ends (`.[otel]`)."""
