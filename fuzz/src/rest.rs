//! The REST query string (edge-rest `query_string::parse`), then the query object it yields
//! through `query_language::query_json::query_from_json`: what every `GET /items/...` does with
//! the URL's query before any call to the core.

/// Fuzz input → UTF-8 (lossy) raw query string (still percent-encoded, as the URL carries it).
pub fn query_string(data: &[u8]) {
    let raw = String::from_utf8_lossy(data);
    if let Ok(parsed) = edge_rest::query_string::parse(&raw) {
        let _ = query_language::query_json::query_from_json(&parsed.query);
    }
}
