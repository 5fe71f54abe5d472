//! The root fields only `/graphql/system` has besides its collections' (docs/graphql.md,
//! `/graphql/system`): `auth_login`, `auth_refresh`, `auth_logout`,
//! `auth_password_request`, `auth_password_reset` (the same AuthService calls as REST's
//! `/auth/*`, with the same cookies in modes `cookie` and `session`), and `server_ping`. The
//! system collections themselves (`users`, `users_me`, `roles`...) are [`crate::root`]'s.

use crate::root::request_env;
use crate::utils::Util;
use crate::values::field_result;
use async_graphql::Value;
use async_graphql::dynamic::{Field, FieldFuture, FieldValue, InputValue, Object, ResolverContext, TypeRef};
use cdapi_proto::ApiError;
use cdapi_proto::v1::*;
use edge_http::cookies::{Kind, refresh_request, session_mode};
use serde_json::json;

/// A string argument (absent or null: empty).
fn text(ctx: &ResolverContext<'_>, name: &str) -> String {
    ctx.args.get(name).and_then(|v| v.string().ok().map(str::to_owned)).unwrap_or_default()
}

/// `mode` (an `auth_mode` enum value). Errors: INVALID_PAYLOAD.
fn mode(ctx: &ResolverContext<'_>) -> Result<Option<SessionMode>, ApiError> {
    match ctx.args.get("mode").map(|v| v.as_value()) {
        Some(Value::Enum(e)) => session_mode(e.as_str()),
        Some(Value::String(s)) => session_mode(s),
        _ => Ok(None),
    }
}

/// The `auth_tokens` object of a reply (docs/authentication.md: no access token in
/// mode session, no refresh token in modes cookie and session), its cookie set on the response.
fn tokens(ctx: &ResolverContext<'_>, t: &TokenReply) -> Result<FieldValue<'static>, ApiError> {
    let (backend, _, _) = request_env(ctx)?;
    let mode = SessionMode::try_from(t.mode).unwrap_or(SessionMode::Json);
    let cookie = match mode {
        SessionMode::Json => None,
        SessionMode::Cookie => Some(backend.cookies.set(Kind::Refresh, &t.refresh_token, t.cookie_ttl_ms)),
        SessionMode::Session => Some(backend.cookies.set(Kind::Session, &t.access_token, t.cookie_ttl_ms)),
    };
    if let Some(c) = cookie {
        ctx.ctx.append_http_header("set-cookie", c);
    }
    let body = match mode {
        SessionMode::Json => json!({"access_token": t.access_token, "expires": t.expires_ms, "refresh_token": t.refresh_token}),
        SessionMode::Cookie => json!({"access_token": t.access_token, "expires": t.expires_ms}),
        SessionMode::Session => json!({"expires": t.expires_ms}),
    };
    Ok(FieldValue::owned_any(body))
}

/// Which auth mutation.
#[derive(Clone, Copy)]
enum AuthOp {
    Login,
    Refresh,
    Logout,
    PasswordRequest,
    PasswordReset,
}

async fn resolve<'a>(ctx: &ResolverContext<'a>, op: AuthOp) -> Result<Option<FieldValue<'a>>, ApiError> {
    let (backend, _, req) = request_env(ctx)?;
    let mut auth = backend.auth.clone();
    let call = &req.caller;
    let done = || Some(FieldValue::value(true));
    match op {
        AuthOp::Login => {
            let otp = Some(text(ctx, "otp")).filter(|o| !o.is_empty());
            let mode = mode(ctx)?.unwrap_or(SessionMode::Json);
            let msg = LoginRequest { email: text(ctx, "email"), password: text(ctx, "password"), otp, mode: mode as i32 };
            let t = auth.login(call.request(msg)?).await?.into_inner();
            Ok(Some(tokens(ctx, &t)?))
        }
        AuthOp::Refresh => {
            let msg = refresh_request(text(ctx, "refresh_token"), mode(ctx)?, req.refresh_cookie.clone(), req.session_cookie.clone());
            let t = auth.refresh(call.request(msg)?).await?.into_inner();
            Ok(Some(tokens(ctx, &t)?))
        }
        AuthOp::Logout => {
            let mut refresh_token = text(ctx, "refresh_token");
            if refresh_token.is_empty() {
                refresh_token = req.refresh_cookie.clone().unwrap_or_default();
            }
            let session_token = req.session_cookie.clone().unwrap_or_default();
            auth.logout(call.request(LogoutRequest { refresh_token, session_token })?).await?;
            ctx.ctx.append_http_header("set-cookie", backend.cookies.clear(Kind::Refresh));
            ctx.ctx.append_http_header("set-cookie", backend.cookies.clear(Kind::Session));
            Ok(done())
        }
        AuthOp::PasswordRequest => {
            let reset_url = Some(text(ctx, "reset_url")).filter(|u| !u.is_empty());
            auth.request_password_reset(call.request(PasswordResetRequest { email: text(ctx, "email"), reset_url })?).await?;
            Ok(done())
        }
        AuthOp::PasswordReset => {
            auth.reset_password(call.request(ResetPasswordRequest { token: text(ctx, "token"), password: text(ctx, "password") })?).await?;
            Ok(done())
        }
    }
}

/// A system root field: an auth call or a utility.
#[derive(Clone, Copy)]
enum Op {
    Auth(AuthOp),
    Util(Util),
}

fn op_field(name: &str, ty: TypeRef, op: Op, args: &[(&str, TypeRef)]) -> Field {
    let field = Field::new(name, ty, move |ctx| {
        FieldFuture::new(async move {
            let result = match op {
                Op::Auth(a) => resolve(&ctx, a).await,
                Op::Util(u) => crate::utils::resolve(&ctx, u).await,
            };
            field_result(ctx.ctx, true, result)
        })
    });
    args.iter().fold(field, |f, (n, t)| f.argument(InputValue::new(*n, t.clone())))
}

/// Adds `server_ping` to a Query (`/graphql/system`, and `/graphql` of an empty database).
pub fn ping_field(query: Object) -> Object {
    query.field(Field::new("server_ping", TypeRef::named(TypeRef::STRING), |_| FieldFuture::Value(Some(FieldValue::value("pong")))))
}

/// Adds `server_ping` to the system Query (its collections' fields come from [`crate::root`]).
pub fn query_fields(query: Object) -> Object {
    ping_field(query)
}

/// Adds the `auth_*` and `utils_*` ([`crate::utils`]) mutations to the system Mutation.
pub fn mutation_fields(mutation: Object) -> Object {
    let s = || TypeRef::named(TypeRef::STRING);
    let s_nn = || TypeRef::named_nn(TypeRef::STRING);
    let id_nn = || TypeRef::named_nn(TypeRef::ID);
    let mode = || TypeRef::named("auth_mode");
    let tokens = || TypeRef::named("auth_tokens");
    let ok = || TypeRef::named(TypeRef::BOOLEAN);
    let auth = |name, ty, op, args: &[(&str, TypeRef)]| op_field(name, ty, Op::Auth(op), args);
    let util = |name, ty, u, args: &[(&str, TypeRef)]| op_field(name, ty, Op::Util(u), args);
    mutation
        .field(auth("auth_login", tokens(), AuthOp::Login, &[("email", s_nn()), ("password", s_nn()), ("mode", mode()), ("otp", s())]))
        .field(auth("auth_refresh", tokens(), AuthOp::Refresh, &[("refresh_token", s()), ("mode", mode())]))
        .field(auth("auth_logout", ok(), AuthOp::Logout, &[("refresh_token", s()), ("mode", mode())]))
        .field(auth("auth_password_request", ok(), AuthOp::PasswordRequest, &[("email", s_nn()), ("reset_url", s())]))
        .field(auth("auth_password_reset", ok(), AuthOp::PasswordReset, &[("token", s_nn()), ("password", s_nn())]))
        .field(util("utils_random_string", s(), Util::RandomString, &[("length", TypeRef::named(TypeRef::INT))]))
        .field(util("utils_hash_generate", s(), Util::HashGenerate, &[("string", s_nn())]))
        .field(util("utils_hash_verify", ok(), Util::HashVerify, &[("string", s_nn()), ("hash", s_nn())]))
        .field(util("utils_sort", ok(), Util::Sort, &[("collection", s_nn()), ("item", id_nn()), ("to", id_nn())]))
        .field(util("utils_revert", ok(), Util::Revert, &[("revision", id_nn())]))
        .field(util("utils_cache_clear", TypeRef::named("Void"), Util::CacheClear, &[]))
}
