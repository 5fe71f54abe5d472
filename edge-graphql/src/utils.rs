//! What the `utils_*` mutations of `/graphql/system` do (Directus's; declared with their types
//! in [`crate::system`]), over [`edge_http::utils`] and [`edge_http::revert`], the calls REST's
//! `/utils` makes (docs/history.md "Utilities"): `utils_random_string(length: Int): String`,
//! `utils_hash_generate(string: String!): String`,
//! `utils_hash_verify(string: String!, hash: String!): Boolean`,
//! `utils_sort(collection: String!, item: ID!, to: ID!): Boolean`,
//! `utils_revert(revision: ID!): Boolean`, `utils_cache_clear: Void`.

use crate::root::request_env;
use async_graphql::Value;
use async_graphql::dynamic::{FieldValue, ResolverContext};
use cdapi_proto::ApiError;
use edge_http::utils;

/// Which utility.
#[derive(Clone, Copy)]
pub enum Util {
    /// `utils_random_string`.
    RandomString,
    /// `utils_hash_generate`.
    HashGenerate,
    /// `utils_hash_verify`.
    HashVerify,
    /// `utils_sort`.
    Sort,
    /// `utils_revert`.
    Revert,
    /// `utils_cache_clear`.
    CacheClear,
}

/// An argument as text: strings as they are, numbers (IDs may come as numbers) in decimal.
/// Errors: INVALID_PAYLOAD `"<name>" is required` when absent, null or empty.
fn arg(ctx: &ResolverContext<'_>, name: &str) -> Result<String, ApiError> {
    match ctx.args.get(name).map(|v| v.as_value()) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        _ => Err(ApiError::invalid_payload(format!("\"{name}\" is required"))),
    }
}

/// Runs `util` with the field's arguments. Errors: as the calls made (INVALID_PAYLOAD for a
/// missing argument).
pub async fn resolve(ctx: &ResolverContext<'_>, util: Util) -> Result<Option<FieldValue<'static>>, ApiError> {
    let (backend, _, req) = request_env(ctx)?;
    let caller = &req.caller;
    let value = match util {
        Util::RandomString => {
            let length = ctx.args.get("length").and_then(|v| v.i64().ok());
            FieldValue::value(utils::random_string(length).map_err(|e| if e.cause.is_some() { e } else { ApiError::invalid_payload(e.message) })?)
        }
        Util::HashGenerate => FieldValue::value(utils::generate_hash(&backend.auth, caller, arg(ctx, "string")?).await?),
        Util::HashVerify => FieldValue::value(utils::verify_hash(&backend.auth, caller, arg(ctx, "string")?, arg(ctx, "hash")?).await?),
        Util::Sort => {
            utils::sort(&backend.items, caller, arg(ctx, "collection")?, arg(ctx, "item")?, arg(ctx, "to")?).await?;
            FieldValue::value(true)
        }
        Util::Revert => {
            edge_http::revert::revert(&backend.items, &backend.schema, caller, arg(ctx, "revision")?).await?;
            FieldValue::value(true)
        }
        Util::CacheClear => {
            utils::clear_cache(&backend.schema, caller).await?;
            return Ok(None);
        }
    };
    Ok(Some(value))
}
