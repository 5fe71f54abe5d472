//! The `utils_*` mutations of `/graphql/system` (Directus's, with its types), over
//! [`edge_http::utils`] and [`edge_http::revert`], the calls REST's `/utils` makes (README
//! "Utilities"): `utils_random_string(length: Int): String`,
//! `utils_hash_generate(string: String!): String`,
//! `utils_hash_verify(string: String!, hash: String!): Boolean`,
//! `utils_sort(collection: String!, item: ID!, to: ID!): Boolean`,
//! `utils_revert(revision: ID!): Boolean`, `utils_cache_clear: Void`.

use crate::root::request_env;
use crate::values::field_result;
use async_graphql::Value;
use async_graphql::dynamic::{Field, FieldFuture, FieldValue, InputValue, Object, ResolverContext, TypeRef};
use cdapi_proto::ApiError;
use edge_http::utils;

/// Which utility.
#[derive(Clone, Copy)]
enum Util {
    RandomString,
    HashGenerate,
    HashVerify,
    Sort,
    Revert,
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

async fn resolve(ctx: &ResolverContext<'_>, util: Util) -> Result<Option<FieldValue<'static>>, ApiError> {
    let (backend, _, req) = request_env(ctx)?;
    let caller = &req.caller;
    let value = match util {
        Util::RandomString => {
            let length = ctx.args.get("length").and_then(|v| v.i64().ok());
            FieldValue::value(utils::random_string(length).map_err(|e| ApiError::invalid_payload(e.message))?)
        }
        Util::HashGenerate => FieldValue::value(utils::generate_hash(&backend.auth, caller, arg(ctx, "string")?).await?),
        Util::HashVerify => FieldValue::value(utils::verify_hash(&backend.auth, caller, arg(ctx, "string")?, arg(ctx, "hash")?).await?),
        Util::Sort => {
            utils::sort(&backend.items, caller, arg(ctx, "collection")?, arg(ctx, "item")?, arg(ctx, "to")?).await?;
            FieldValue::value(true)
        }
        Util::Revert => {
            edge_http::revert::revert(&backend.items, caller, arg(ctx, "revision")?).await?;
            FieldValue::value(true)
        }
        Util::CacheClear => {
            utils::clear_cache(&backend.schema, caller).await?;
            return Ok(None);
        }
    };
    Ok(Some(value))
}

fn util_field(name: &str, ty: TypeRef, util: Util, args: &[(&str, TypeRef)]) -> Field {
    let field = Field::new(name, ty, move |ctx| {
        FieldFuture::new(async move {
            let result = resolve(&ctx, util).await;
            field_result(ctx.ctx, true, result)
        })
    });
    args.iter().fold(field, |f, (n, t)| f.argument(InputValue::new(*n, t.clone())))
}

/// Adds the `utils_*` mutations to the system Mutation.
pub fn mutation_fields(mutation: Object) -> Object {
    let s = || TypeRef::named(TypeRef::STRING);
    let s_nn = || TypeRef::named_nn(TypeRef::STRING);
    let id_nn = || TypeRef::named_nn(TypeRef::ID);
    let ok = || TypeRef::named(TypeRef::BOOLEAN);
    mutation
        .field(util_field("utils_random_string", s(), Util::RandomString, &[("length", TypeRef::named(TypeRef::INT))]))
        .field(util_field("utils_hash_generate", s(), Util::HashGenerate, &[("string", s_nn())]))
        .field(util_field("utils_hash_verify", ok(), Util::HashVerify, &[("string", s_nn()), ("hash", s_nn())]))
        .field(util_field("utils_sort", ok(), Util::Sort, &[("collection", s_nn()), ("item", id_nn()), ("to", id_nn())]))
        .field(util_field("utils_revert", ok(), Util::Revert, &[("revision", id_nn())]))
        .field(util_field("utils_cache_clear", TypeRef::named("Void"), Util::CacheClear, &[]))
}
