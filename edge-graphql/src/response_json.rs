//! A GraphQL response as the JSON Directus writes: key order, error shapes and codes. Shared
//! by HTTP ([`crate::http`]) and WebSocket ([`crate::ws`]) replies.

use cdapi_proto::ErrorCode;

/// One GraphQL error with its keys in the order Directus's formatting leaves them: `message`,
/// `extensions` (when `with_extensions`), `locations`, `path` (each only when present).
pub fn error_json(e: &async_graphql::ServerError, with_extensions: bool) -> Result<String, serde_json::Error> {
    let mut o = format!(r#"{{"message":{}"#, serde_json::to_string(&e.message)?);
    if let Some(x) = e.extensions.as_ref().filter(|_| with_extensions) {
        o.push_str(&format!(r#","extensions":{}"#, serde_json::to_string(x)?));
    }
    if !e.locations.is_empty() {
        o.push_str(&format!(r#","locations":{}"#, serde_json::to_string(&e.locations)?));
    }
    if !e.path.is_empty() {
        o.push_str(&format!(r#","path":{}"#, serde_json::to_string(&e.path)?));
    }
    o.push('}');
    Ok(o)
}

/// The response's JSON as Directus writes it: `data`, then `errors` ([`error_json`]), then
/// `extensions` when there are any.
pub fn response_body(r: &async_graphql::Response) -> Result<String, serde_json::Error> {
    let mut out = format!(r#"{{"data":{}"#, serde_json::to_string(&r.data)?);
    if !r.errors.is_empty() {
        let errors = r.errors.iter().map(|e| error_json(e, true)).collect::<Result<Vec<_>, _>>()?;
        out.push_str(&format!(r#","errors":[{}]"#, errors.join(",")));
    }
    if !r.extensions.is_empty() {
        out.push_str(&format!(r#","extensions":{}"#, serde_json::to_string(&r.extensions)?));
    }
    out.push('}');
    Ok(out)
}

/// Gives every error of `response` a `code` (GRAPHQL_VALIDATION for parse and validation
/// errors, INTERNAL_SERVER_ERROR for unexpected ones); returns whether nothing ran (no data,
/// errors without a path).
pub fn with_codes(response: &mut async_graphql::Response) -> bool {
    let not_executed = response.data == async_graphql::Value::Null && !response.errors.is_empty() && response.errors.iter().all(|e| e.path.is_empty());
    let fallback = if not_executed { "GRAPHQL_VALIDATION" } else { ErrorCode::InternalServerError.as_str() };
    for e in &mut response.errors {
        let ext = e.extensions.get_or_insert_with(Default::default);
        if ext.get("code").is_none() {
            ext.set("code", fallback);
        }
    }
    not_executed
}
