//! Directus's utility calls (`/utils/*` in REST, `utils_*` in GraphQL `/graphql/system`), one
//! implementation for both edges (docs/history.md "Utilities"; revert is [`crate::revert`]):
//! - random strings: Directus's `nanoid` (alphabet `A-Za-z0-9_-`), 1 to 500 characters,
//!   default 32, made here;
//! - argon2 hashes made and checked by auth-service's bounded hasher (anyone may call them, as in
//!   Directus; the hasher's concurrency bound and queue timeout are their budget);
//! - manual order (`sort`) by core-service;
//! - clearing the cache: admin only; the only caches are each core replica's schema and
//!   permission snapshot, which this reloads (Directus's `system` cache; Directus's data cache
//!   has no counterpart: reads are never cached).

use crate::balance::Balanced;
use crate::caller::Caller;
use cdapi_proto::ApiError;
use cdapi_proto::v1::auth_service_client::AuthServiceClient;
use cdapi_proto::v1::items_service_client::ItemsServiceClient;
use cdapi_proto::v1::schema_service_client::SchemaServiceClient;
use cdapi_proto::v1::{HashRequest, ReloadSchemaRequest, SortItemRequest};

/// nanoid's URL-safe alphabet (64 characters, so a random byte's low 6 bits pick one evenly).
const ALPHABET: &[u8; 64] = b"useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict";

/// The longest random string (characters), as Directus.
pub const MAX_RANDOM_LENGTH: i64 = 500;

/// The default random string length, as Directus.
pub const DEFAULT_RANDOM_LENGTH: i64 = 32;

/// A random string of `length` characters (`None`: 32) from the operating system's generator.
/// Errors: INVALID_QUERY outside 1..=500 (Directus's wording), INTERNAL without randomness.
pub fn random_string(length: Option<i64>) -> Result<String, ApiError> {
    let length = length.unwrap_or(DEFAULT_RANDOM_LENGTH);
    if length < 1 {
        return Err(ApiError::invalid_query("\"length\" must be greater than or equal to 1"));
    }
    if length > MAX_RANDOM_LENGTH {
        return Err(ApiError::invalid_query(format!("\"length\" must be less than or equal to {MAX_RANDOM_LENGTH}")));
    }
    let mut bytes = vec![0u8; length as usize];
    getrandom::fill(&mut bytes).map_err(|e| ApiError::internal_because(format!("no randomness for a random string: {e}")))?;
    Ok(bytes.iter().map(|b| char::from(ALPHABET[usize::from(b & 63)])).collect())
}

/// An argon2 hash of `string` (auth-service `GenerateHash`). Errors: as that call.
pub async fn generate_hash(auth: &AuthServiceClient<Balanced>, caller: &Caller, string: String) -> Result<String, ApiError> {
    let call = caller.request(HashRequest { string, hash: String::new() })?;
    Ok(auth.clone().generate_hash(call).await?.into_inner().hash)
}

/// Whether `string` matches the argon2 `hash` (auth-service `VerifyHash`). Errors: as that call.
pub async fn verify_hash(auth: &AuthServiceClient<Balanced>, caller: &Caller, string: String, hash: String) -> Result<bool, ApiError> {
    let call = caller.request(HashRequest { string, hash })?;
    Ok(auth.clone().verify_hash(call).await?.into_inner().matches)
}

/// Moves `item` to `to`'s place in `collection`'s manual order (core `SortItem`). Errors: as
/// that call.
pub async fn sort(items: &ItemsServiceClient<Balanced>, caller: &Caller, collection: String, item: String, to: String) -> Result<(), ApiError> {
    let call = caller.request(SortItemRequest { collection, item, to })?;
    items.clone().sort_item(call).await?;
    Ok(())
}

/// Clears the caches: the core replica answering reloads its schema and permission snapshot
/// (the others follow the database's schema-change notices). Errors: FORBIDDEN unless admin.
pub async fn clear_cache(schema: &SchemaServiceClient<Balanced>, caller: &Caller) -> Result<(), ApiError> {
    schema.clone().reload_schema(caller.request(ReloadSchemaRequest {})?).await?;
    Ok(())
}

/// A primary key sent as a JSON string or number, as text (Directus's `item`/`to`: string or
/// number). Errors: INVALID_PAYLOAD `"<name>" is required` otherwise.
pub fn key_text(value: Option<&serde_json::Value>, name: &str) -> Result<String, ApiError> {
    match value {
        Some(serde_json::Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(serde_json::Value::Number(n)) => Ok(n.to_string()),
        _ => Err(ApiError::invalid_payload(format!("\"{name}\" is required"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_strings_have_the_length_asked_and_the_alphabet() {
        let a = random_string(None).unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-'), "{a}");
        assert_ne!(a, random_string(None).unwrap());
        assert_eq!(random_string(Some(500)).unwrap().len(), 500);
        assert_eq!(random_string(Some(0)).unwrap_err().code, cdapi_proto::ErrorCode::InvalidQuery);
        assert_eq!(random_string(Some(501)).unwrap_err().code, cdapi_proto::ErrorCode::InvalidQuery);
    }

    #[test]
    fn keys_are_strings_or_numbers() {
        assert_eq!(key_text(Some(&serde_json::json!(7)), "item").unwrap(), "7");
        assert_eq!(key_text(Some(&serde_json::json!("a")), "item").unwrap(), "a");
        for bad in [None, Some(serde_json::json!(null)), Some(serde_json::json!("")), Some(serde_json::json!([1]))] {
            assert!(key_text(bad.as_ref(), "to").unwrap_err().message.contains("\"to\" is required"));
        }
    }
}
