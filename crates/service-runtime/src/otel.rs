//! Optional OpenTelemetry export of spans (docs/operations.md "What to monitor"): on when the
//! standard `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set,
//! off otherwise. Spans go by OTLP over HTTP (protobuf) in batches (`OTEL_BSP_*` settings);
//! the service name is `OTEL_SERVICE_NAME` or the binary's. The gRPC servers' span of each call
//! ([`crate::grpc::RpcLayer`]) takes the caller's `traceparent` as its parent, so a request's
//! spans in core-service and auth-service form one trace.

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::sync::OnceLock;

static ENABLED: OnceLock<bool> = OnceLock::new();

/// Whether spans are exported (decided once, at [`crate::init_tracing`]).
pub fn enabled() -> bool {
    ENABLED.get().copied().unwrap_or(false)
}

/// Whether the environment asks for export.
pub fn requested() -> bool {
    crate::env_opt("OTEL_EXPORTER_OTLP_ENDPOINT").is_some() || crate::env_opt("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
}

/// The tracer provider exporting to the configured endpoint. Errors: the exporter cannot be
/// built (an invalid endpoint URL).
pub fn provider(service: &str) -> anyhow::Result<SdkTracerProvider> {
    // The exporter's HTTP client (reqwest) shares the workspace's rustls, built without a
    // default crypto provider: install the one the services use (ring) before building it.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let exporter = opentelemetry_otlp::SpanExporter::builder().with_http().build()?;
    let name = crate::env_opt("OTEL_SERVICE_NAME").unwrap_or_else(|| service.to_owned());
    let resource = opentelemetry_sdk::Resource::builder().with_service_name(name).build();
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
    let _ = ENABLED.set(true);
    Ok(provider)
}

struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// Makes the caller's `traceparent` (in `headers`) the parent of `span`, when exporting.
pub fn adopt_parent(span: &tracing::Span, headers: &http::HeaderMap) {
    if !enabled() {
        return;
    }
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let parent = TraceContextPropagator::new().extract(&Headers(headers));
    let _ = span.set_parent(parent);
}

/// The trace context of the current span as the next hop's `traceparent`, when exporting
/// (so the services' spans become children of the edge's); `None` otherwise.
pub fn current_traceparent() -> Option<crate::trace::TraceParent> {
    if !enabled() {
        return None;
    }
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let cx = tracing::Span::current().context();
    let span = cx.span();
    let sc = span.span_context();
    sc.is_valid().then(|| crate::trace::TraceParent {
        trace_id: u128::from_be_bytes(sc.trace_id().to_bytes()),
        parent_id: u64::from_be_bytes(sc.span_id().to_bytes()),
        flags: sc.trace_flags().to_u8(),
    })
}

/// Flushes and stops the exporter when dropped (at the end of `main`).
pub struct Guard(pub(crate) Option<SdkTracerProvider>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(p) = self.0.take()
            && let Err(e) = p.shutdown()
        {
            eprintln!("flushing OpenTelemetry spans failed: {e}");
        }
    }
}
