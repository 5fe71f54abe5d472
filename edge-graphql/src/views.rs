//! Schemas per caller: each caller sees a GraphQL schema of what their role may read, as
//! Directus builds one per role, so collections and fields outside a role's permissions are
//! neither queryable nor visible to introspection (docs/graphql.md).
//!
//! The core answers `GetSchema` with the caller's read view of the snapshot. A caller's view
//! is cached by credential (a hash of the token; one entry for the public role) for
//! [`VIEW_TTL`]; views with the same content share one build (by fingerprint), so all the
//! tokens of one role cost one build, and the admin's view is the schema the watcher built.
//! A new snapshot from `WatchSchema` (DDL, permission or role changes) drops every cached view.

use crate::schemas::{Built, Limits, build, fingerprint};
use crate::{Backend, model::Model};
use cdapi_proto::ApiError;
use cdapi_proto::v1::GetSchemaRequest;
use edge_http::caller::Caller;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// How long a caller's view is reused before the core is asked again (a role change of a
/// user shows after this; permission changes show at once through the snapshot stream).
pub const VIEW_TTL: Duration = Duration::from_secs(30);
/// Most cached credentials; past it the cache starts afresh.
const MAX_ENTRIES: usize = 10_000;

/// The per-caller views of one base snapshot.
#[derive(Default)]
pub struct Views {
    /// Credential hash → (when asked, the view).
    by_caller: Mutex<HashMap<u64, (Instant, Arc<Built>)>>,
    /// View fingerprint → the build, shared while any caller uses it.
    by_fingerprint: Mutex<HashMap<u64, Weak<Built>>>,
}

fn credential_key(caller: &Caller) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    caller.bearer.hash(&mut h);
    h.finish()
}

impl Views {
    /// Forgets every view (a new snapshot arrived).
    pub fn clear(&self) {
        if let Ok(mut m) = self.by_caller.lock() {
            m.clear();
        }
        if let Ok(mut m) = self.by_fingerprint.lock() {
            m.clear();
        }
    }

    /// The schemas `caller` may see. `base` is the full schema (the admin's view).
    /// Errors: the core's answer to `GetSchema` (INVALID_TOKEN, TOKEN_EXPIRED, unavailable).
    pub async fn for_caller(&self, caller: &Caller, base: &Arc<Built>, backend: &Arc<Backend>, limits: Limits) -> Result<Arc<Built>, ApiError> {
        let key = credential_key(caller);
        if let Ok(m) = self.by_caller.lock()
            && let Some((at, built)) = m.get(&key)
            && at.elapsed() < VIEW_TTL
        {
            return Ok(built.clone());
        }
        let snapshot = backend.schema.clone().get_schema(caller.request(GetSchemaRequest {})?).await?.into_inner();
        let print = fingerprint(&snapshot);
        let shared =
            if print == base.fingerprint { Some(base.clone()) } else { self.by_fingerprint.lock().ok().and_then(|m| m.get(&print).and_then(Weak::upgrade)) };
        let built = match shared {
            Some(b) => b,
            None => {
                let started = Instant::now();
                let built = Arc::new(
                    build(Model::from_snapshot(&snapshot), print, backend, limits)
                        .map_err(|e| ApiError::internal_because(format!("building a role's GraphQL schema failed: {}", e.0)))?,
                );
                tracing::debug!(
                    collections = built.model.collections.len(),
                    build_ms = started.elapsed().as_secs_f64() * 1e3,
                    "GraphQL schema of a role built"
                );
                if let Ok(mut m) = self.by_fingerprint.lock() {
                    m.retain(|_, w| w.strong_count() > 0);
                    m.insert(print, Arc::downgrade(&built));
                }
                built
            }
        };
        if let Ok(mut m) = self.by_caller.lock() {
            if m.len() >= MAX_ENTRIES {
                m.clear();
            }
            m.insert(key, (Instant::now(), built.clone()));
        }
        Ok(built)
    }
}
