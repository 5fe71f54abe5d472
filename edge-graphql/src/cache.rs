//! The schemas in use: the current build of the full snapshot (swapped in atomically, so a
//! request never waits for a build), the per-caller views ([`crate::views`]), and [`watch`],
//! which follows the core's `WatchSchema` stream and reconnects with backoff.

use crate::Backend;
use crate::model::Model;
use crate::schemas::{Built, Limits, build, fingerprint};
use arc_swap::ArcSwapOption;
use cdapi_proto::v1::WatchSchemaRequest;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The schemas in use.
pub struct SchemaCache {
    current: ArcSwapOption<Built>,
    backend: Arc<Backend>,
    limits: Limits,
    views: crate::views::Views,
}

impl SchemaCache {
    /// An empty cache (requests answer 503 until the first snapshot is built).
    pub fn new(backend: Arc<Backend>, limits: Limits) -> Self {
        Self { current: ArcSwapOption::empty(), backend, limits, views: crate::views::Views::default() }
    }

    /// The schemas `caller` may see (their role's read view; see [`crate::views`]).
    /// Errors: SERVICE_UNAVAILABLE before the first snapshot; the core's answer for the
    /// caller's credentials (INVALID_TOKEN, ...).
    pub async fn for_caller(&self, caller: &edge_http::caller::Caller) -> Result<Arc<Built>, cdapi_proto::ApiError> {
        let base =
            self.current().ok_or_else(|| cdapi_proto::ApiError::new(cdapi_proto::ErrorCode::ServiceUnavailable, "The GraphQL schema is not loaded yet."))?;
        self.views.for_caller(caller, &base, &self.backend, self.limits).await
    }

    /// The services behind the edge.
    pub fn backend(&self) -> &Arc<Backend> {
        &self.backend
    }

    /// The schemas in use, if any.
    pub fn current(&self) -> Option<Arc<Built>> {
        self.current.load_full()
    }

    /// Builds and swaps in the schemas of a snapshot (kept as they were when the build fails).
    pub fn update(&self, snapshot: &cdapi_proto::v1::SchemaSnapshot) {
        // Any new snapshot may come from a permission or role change, which leaves the full
        // snapshot as it was but changes the roles' views: those are asked for again.
        self.views.clear();
        let fingerprint = fingerprint(snapshot);
        if self.current().is_some_and(|b| b.fingerprint == fingerprint) {
            return;
        }
        let started = Instant::now();
        let model = Model::from_snapshot(snapshot);
        for (c, why) in &model.skipped {
            tracing::warn!(collection = %c, reason = %why, "collection left out of the GraphQL schema");
        }
        let collections = model.collections.len();
        match build(model, fingerprint, &self.backend, self.limits) {
            Ok(built) => {
                tracing::info!(version = built.version, collections, build_ms = started.elapsed().as_secs_f64() * 1e3, "GraphQL schemas built");
                self.current.store(Some(Arc::new(built)));
            }
            Err(e) => tracing::error!(version = snapshot.version, error = %e.0, "building the GraphQL schema failed; keeping the previous one"),
        }
    }
}

/// Follows the core's `WatchSchema` stream for as long as the process runs: every snapshot it
/// sends is built and swapped in. On a lost stream it reconnects, backing off from 200 ms to 5 s.
pub async fn watch(cache: Arc<SchemaCache>) {
    let mut backoff = Duration::from_millis(200);
    loop {
        match cache.backend.schema.clone().watch_schema(WatchSchemaRequest {}).await {
            Ok(stream) => {
                let mut stream = stream.into_inner();
                loop {
                    match stream.message().await {
                        Ok(Some(snapshot)) => {
                            backoff = Duration::from_millis(200);
                            cache.update(&snapshot);
                        }
                        Ok(None) => {
                            tracing::info!("the core ended the schema stream; reconnecting");
                            break;
                        }
                        Err(e) => {
                            tracing::warn!(message = %e.message(), "schema stream failed; reconnecting");
                            break;
                        }
                    }
                }
            }
            Err(e) => tracing::debug!(message = %e.message(), "core not reachable for the schema stream yet"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}
