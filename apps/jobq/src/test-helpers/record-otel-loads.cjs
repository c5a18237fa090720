// Preloaded (node --require) by the tracing test: prints one stderr line per OpenTelemetry SDK
// package the process loads, so a test can tell that a command loaded none of them.
const Module = require('node:module');
const seen = new Set();
const load = Module._load;
Module._load = function (request, ...rest) {
  const match = /^@opentelemetry\/(sdk-trace-node|exporter-trace-otlp-http|resources)$/.exec(request);
  if (match && !seen.has(request)) {
    seen.add(request);
    process.stderr.write(`otel-load: ${request}\n`);
  }
  return load.call(this, request, ...rest);
};
