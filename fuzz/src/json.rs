//! The Directus query object and filter in their JSON form (cdapi-proto `query_json`): the
//! `SEARCH` body's `query`, a `filter=<json>` parameter, the filters of permission rows.

use query_language::query_json::{MAX_DEPTH, filter_from_json, query_from_json};

/// Fuzz input → JSON (inputs that are not JSON are skipped, as the edges answer
/// INVALID_PAYLOAD before any parser runs) → `query_from_json` when it is an object.
pub fn query(data: &[u8]) {
    if let Ok(serde_json::Value::Object(obj)) = serde_json::from_slice::<serde_json::Value>(data) {
        let _ = query_from_json(&obj);
    }
}

/// Fuzz input → JSON → `filter_from_json`, at the top level and just under the depth limit.
pub fn filter(data: &[u8]) {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
        let _ = filter_from_json(&v, 0);
        let _ = filter_from_json(&v, MAX_DEPTH);
    }
}
