//! `/auth/*` and `/users/me/tfa/*` (docs/authentication.md; Directus's paths) →
//! AuthService. This module renders what the protocol needs (token bodies per mode, cookies,
//! redirects); every rule lives in auth-service.
//!
//! - `POST /auth/login` (and `/auth/login/default`) `{email, password, otp?, mode?}`
//! - `POST /auth/refresh` `{refresh_token?, mode?}`, token from the body or a cookie
//! - `POST /auth/logout` `{refresh_token?}` → 204, both cookies cleared
//! - `POST /auth/password/request` `{email, reset_url?}` → 204
//! - `POST /auth/password/reset` `{token, password}` → 204
//! - `GET /auth` → `{data: [providers], disableDefault}`
//! - `GET /auth/login/:provider?redirect=&mode=` → 302 to the provider;
//!   `GET /auth/login/:provider/callback` → session cookie, then 302 to `redirect` (with
//!   `?reason=<CODE>` on failure) or the token body
//! - `POST /shares/auth` `{share, password?, mode?}` (a share session's tokens, as a login's),
//!   `GET /shares/info/:id` and `POST /shares/invite` `{share, emails}` → 204 (docs/shares.md)
//! - `POST /users/me/tfa/generate` `{password}` → `{data: {secret, otpauth_url}}`;
//!   `POST /users/me/tfa/enable` `{secret, otp}`, `POST /users/me/tfa/disable` `{otp}` → 204

use crate::reply;
use crate::request::{Body, EdgeState, HttpRequest, read_body, require_json};
use cdapi_proto::v1::*;
use cdapi_proto::{ApiError, ErrorCode};
use edge_http::cookies::{self, Kind};
use http::{HeaderValue, Method, StatusCode, header};
use serde_json::{Value, json};
use warp::reply::Response;

/// A JSON body that may be absent (refresh and logout are often sent without one). Errors:
/// UNSUPPORTED_MEDIA_TYPE for a non-JSON body, INVALID_PAYLOAD for malformed JSON or a
/// non-object.
async fn optional_json(req: &HttpRequest, body: Body, max: u64) -> Result<serde_json::Map<String, Value>, ApiError> {
    let bytes = read_body(body, max).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(serde_json::Map::new());
    }
    require_json(req)?;
    match edge_http::body::parse_json(&bytes)? {
        Value::Object(m) => Ok(m),
        _ => Err(ApiError::invalid_payload("The body must be a JSON object")),
    }
}

/// A string member (absent or null = empty). Errors: INVALID_PAYLOAD for another type.
fn text(body: &serde_json::Map<String, Value>, key: &str) -> Result<String, ApiError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(ApiError::invalid_payload(format!("\"{key}\" must be a string"))),
    }
}

fn add_cookie(res: &mut Response, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        res.headers_mut().append(header::SET_COOKIE, v);
    }
}

/// The auth token response object (Directus docs "Authentication") for the reply's mode, with its cookie.
fn token_response(state: &EdgeState, t: &TokenReply) -> Response {
    let mode = SessionMode::try_from(t.mode).unwrap_or(SessionMode::Json);
    // Keys in Directus's order (a serde_json map would sort them).
    let expires = t.expires_ms;
    let text = |v: &str| Value::String(v.to_owned()).to_string();
    let data = match mode {
        SessionMode::Json => format!(r#"{{"expires":{expires},"refresh_token":{},"access_token":{}}}"#, text(&t.refresh_token), text(&t.access_token)),
        SessionMode::Cookie => format!(r#"{{"expires":{expires},"access_token":{}}}"#, text(&t.access_token)),
        SessionMode::Session => format!(r#"{{"expires":{expires}}}"#),
    };
    let mut res = reply::with_body(StatusCode::OK, "application/json; charset=utf-8", format!(r#"{{"data":{data}}}"#));
    token_cookie(state, &mut res, t);
    res
}

/// The cookie of the reply's mode (none in mode json).
fn token_cookie(state: &EdgeState, res: &mut Response, t: &TokenReply) {
    match SessionMode::try_from(t.mode).unwrap_or(SessionMode::Json) {
        SessionMode::Json => {}
        SessionMode::Cookie => add_cookie(res, &state.cookies.set(Kind::Refresh, &t.refresh_token, t.cookie_ttl_ms)),
        SessionMode::Session => add_cookie(res, &state.cookies.set(Kind::Session, &t.access_token, t.cookie_ttl_ms)),
    }
}

/// Routes `/auth/...` (`rest` = the path segments after `auth`).
pub async fn route(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str, rest: &[&str]) -> Result<Response, ApiError> {
    let max = state.max_payload_size;
    let mut auth = state.auth.clone();
    let post_only = || Ok(reply::method_not_allowed(&req.method, "POST"));
    match rest {
        [] | [""] => match req.method {
            Method::GET => {
                let p = auth.list_providers(req.grpc(request_id, None, ListProvidersRequest {})?).await?.into_inner();
                let data: Vec<Value> = p
                    .providers
                    .iter()
                    .map(|p| {
                        let mut o = json!({"name": p.name, "driver": p.driver});
                        if let Some(icon) = &p.icon {
                            o["icon"] = json!(icon);
                        }
                        o
                    })
                    .collect();
                Ok(reply::with_body(StatusCode::OK, "application/json; charset=utf-8", json!({"data": data, "disableDefault": p.disable_default}).to_string()))
            }
            _ => Ok(reply::method_not_allowed(&req.method, "GET")),
        },
        ["login"] => match req.method {
            Method::POST => login(state, req, body, request_id).await,
            _ => post_only(),
        },
        ["login", provider] => match req.method {
            Method::POST if *provider == "default" => login(state, req, body, request_id).await,
            Method::POST => {
                let p = auth.list_providers(req.grpc(request_id, None, ListProvidersRequest {})?).await?.into_inner();
                if p.providers.iter().any(|x| x.name == *provider) {
                    Err(ApiError::invalid_payload(format!("Provider \"{provider}\" signs in through GET /auth/login/{provider}")))
                } else {
                    Err(not_found(req))
                }
            }
            Method::GET => sso_start(state, req, request_id, provider).await,
            _ => Ok(reply::method_not_allowed(&req.method, "GET, POST")),
        },
        ["login", provider, "callback"] => match req.method {
            Method::GET => sso_finish(state, req, request_id, provider).await,
            _ => Ok(reply::method_not_allowed(&req.method, "GET")),
        },
        ["refresh"] => match req.method {
            Method::POST => {
                let b = optional_json(req, body, max).await?;
                let refresh_cookie = cookies::get(&req.headers, state.cookies.name(Kind::Refresh));
                let msg = cookies::refresh_request(
                    text(&b, "refresh_token")?,
                    cookies::session_mode(&text(&b, "mode")?)?,
                    refresh_cookie,
                    req.session_cookie.clone(),
                );
                let t = auth.refresh(req.grpc(request_id, None, msg)?).await?.into_inner();
                Ok(token_response(state, &t))
            }
            _ => post_only(),
        },
        ["logout"] => match req.method {
            Method::POST => {
                let b = optional_json(req, body, max).await?;
                let mut refresh_token = text(&b, "refresh_token")?;
                if refresh_token.is_empty() {
                    refresh_token = cookies::get(&req.headers, state.cookies.name(Kind::Refresh)).unwrap_or_default();
                }
                let session_token = req.session_cookie.clone().unwrap_or_default();
                auth.logout(req.grpc(request_id, None, LogoutRequest { refresh_token, session_token })?).await?;
                let mut res = reply::no_content();
                add_cookie(&mut res, &state.cookies.clear(Kind::Refresh));
                add_cookie(&mut res, &state.cookies.clear(Kind::Session));
                Ok(res)
            }
            _ => post_only(),
        },
        ["password", "request"] => match req.method {
            Method::POST => {
                let b = optional_json(req, body, max).await?;
                let reset_url = Some(text(&b, "reset_url")?).filter(|u| !u.is_empty());
                auth.request_password_reset(req.grpc(request_id, None, PasswordResetRequest { email: text(&b, "email")?, reset_url })?).await?;
                Ok(reply::no_content())
            }
            _ => post_only(),
        },
        ["password", "reset"] => match req.method {
            Method::POST => {
                let b = optional_json(req, body, max).await?;
                auth.reset_password(req.grpc(request_id, None, ResetPasswordRequest { token: text(&b, "token")?, password: text(&b, "password")? })?).await?;
                Ok(reply::no_content())
            }
            _ => post_only(),
        },
        _ => Err(not_found(req)),
    }
}

fn not_found(req: &HttpRequest) -> ApiError {
    ApiError::route_not_found(&req.path)
}

async fn login(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str) -> Result<Response, ApiError> {
    let b = optional_json(req, body, state.max_payload_size).await?;
    let otp = Some(text(&b, "otp")?).filter(|o| !o.is_empty());
    let mode = cookies::session_mode(&text(&b, "mode")?)?.unwrap_or(SessionMode::Json);
    let msg = LoginRequest { email: text(&b, "email")?, password: text(&b, "password")?, otp, mode: mode as i32 };
    let t = state.auth.clone().login(req.grpc(request_id, None, msg)?).await?.into_inner();
    Ok(token_response(state, &t))
}

/// `POST /shares/auth` `{share, password?, mode?}` (docs/shares.md): a share session's tokens,
/// in the body and cookie of `mode` as a login's.
pub async fn share_login(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str) -> Result<Response, ApiError> {
    let b = optional_json(req, body, state.max_payload_size).await?;
    let mode = cookies::session_mode(&text(&b, "mode")?)?.unwrap_or(SessionMode::Json);
    let msg = ShareLoginRequest { share: text(&b, "share")?, password: text(&b, "password")?, mode: mode as i32 };
    let t = state.auth.clone().share_login(req.grpc(request_id, None, msg)?).await?.into_inner();
    Ok(token_response(state, &t))
}

/// `GET /shares/info/:id`, open to anyone: `{data: {id, collection, item, password, max_uses,
/// times_used, date_start, date_end}}` of an open share (the password masked).
pub async fn share_info(state: &EdgeState, req: &HttpRequest, request_id: &str, id: &str) -> Result<Response, ApiError> {
    let r = state.auth.clone().share_info(req.grpc(request_id, None, ShareInfoRequest { share: id.to_owned() })?).await?.into_inner();
    Ok(reply::with_body(StatusCode::OK, "application/json; charset=utf-8", format!(r#"{{"data":{}}}"#, r.json)))
}

/// `POST /shares/invite` `{share, emails}` → 204 (docs/shares.md): the caller must be able to
/// read the share (asked of the core, as Directus reads it with the caller's rights), then
/// auth-service mails the link.
pub async fn share_invite(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str) -> Result<Response, ApiError> {
    let (_, token) = crate::request::url_query(req)?;
    let b = optional_json(req, body, state.max_payload_size).await?;
    let share = text(&b, "share")?;
    if share.is_empty() {
        return Err(ApiError::invalid_payload("\"share\" is required"));
    }
    let emails: Vec<String> = match b.get("emails") {
        Some(Value::Array(list)) => list.iter().map(|e| e.as_str().map(str::to_owned)).collect::<Option<_>>(),
        _ => None,
    }
    .ok_or_else(|| ApiError::invalid_payload("\"emails\" must be a list of email addresses"))?;
    let query = crate::request::typed_query(&serde_json::Map::from_iter([("fields".to_owned(), json!(["id"]))]))?;
    let read = ReadRequest { collection: "directus_shares".into(), key: Some(share.clone()), query: Some(query) };
    state.items.clone().read(req.grpc(request_id, token.clone(), read)?).await?;
    state.auth.clone().invite_to_share(req.grpc(request_id, token, ShareInviteRequest { share, emails })?).await?;
    Ok(reply::no_content())
}

/// The query string's parameters as pairs.
fn query_pairs(req: &HttpRequest) -> Vec<(String, String)> {
    form_urlencoded::parse(req.query.as_bytes()).into_owned().collect()
}

fn param(pairs: &[(String, String)], key: &str) -> String {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).unwrap_or_default()
}

fn redirect(to: &str) -> Result<Response, ApiError> {
    let mut res = reply::no_content();
    *res.status_mut() = StatusCode::FOUND;
    res.headers_mut()
        .insert(header::LOCATION, HeaderValue::from_str(to).map_err(|_| ApiError::invalid_payload("The redirect URL is not a valid header value"))?);
    Ok(res)
}

async fn sso_start(state: &EdgeState, req: &HttpRequest, request_id: &str, provider: &str) -> Result<Response, ApiError> {
    let pairs = query_pairs(req);
    let redirect_to = Some(param(&pairs, "redirect")).filter(|r| !r.is_empty());
    let mode = cookies::session_mode(&param(&pairs, "mode"))?.unwrap_or(SessionMode::Cookie);
    let msg = StartSsoRequest { provider: provider.to_owned(), redirect: redirect_to, mode: mode as i32 };
    let r = state.auth.clone().start_sso(req.grpc(request_id, None, msg)?).await?.into_inner();
    let mut res = redirect(&r.url)?;
    add_cookie(&mut res, &cookies::sso_state(&r.state, state.cookies.secure.1));
    Ok(res)
}

async fn sso_finish(state: &EdgeState, req: &HttpRequest, request_id: &str, provider: &str) -> Result<Response, ApiError> {
    let pairs = query_pairs(req);
    let msg = FinishSsoRequest {
        provider: provider.to_owned(),
        code: param(&pairs, "code"),
        state: param(&pairs, "state"),
        error: param(&pairs, "error"),
        state_cookie: cookies::get(&req.headers, cookies::SSO_STATE_COOKIE).unwrap_or_default(),
    };
    let r = state.auth.clone().finish_sso(req.grpc(request_id, None, msg)?).await?.into_inner();
    let mut res = match (&r.tokens, &r.redirect) {
        (Some(t), None) => token_response(state, t),
        (Some(t), Some(to)) => {
            // The tokens travel in the cookie only: the redirect target is another page.
            let mut res = redirect(to)?;
            token_cookie(state, &mut res, t);
            res
        }
        (None, Some(to)) => redirect(&url_with_reason(to, &r.error_code))?,
        (None, None) => return Err(ApiError::new(ErrorCode::parse(&r.error_code).unwrap_or(ErrorCode::InvalidCredentials), "Invalid user credentials.")),
    };
    add_cookie(&mut res, &cookies::clear_sso_state());
    Ok(res)
}

/// `to` with `reason=<code>` added to its query.
fn url_with_reason(to: &str, code: &str) -> String {
    let sep = if to.contains('?') { '&' } else { '?' };
    format!("{to}{sep}reason={}", form_urlencoded::byte_serialize(code.as_bytes()).collect::<String>())
}

/// Routes `/users/me/tfa/:action` (generate, enable, disable).
pub async fn tfa(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str, action: &str) -> Result<Response, ApiError> {
    if req.method != Method::POST {
        return Ok(reply::method_not_allowed(&req.method, "POST"));
    }
    let (_, token) = crate::request::url_query(req)?;
    let b = optional_json(req, body, state.max_payload_size).await?;
    let mut auth = state.auth.clone();
    match action {
        "generate" => {
            let msg = GenerateTfaRequest { password: text(&b, "password")? };
            let s = auth.generate_tfa(req.grpc(request_id, token, msg)?).await?.into_inner();
            Ok(reply::with_body(
                StatusCode::OK,
                "application/json; charset=utf-8",
                json!({"data": {"secret": s.secret, "otpauth_url": s.otpauth_url}}).to_string(),
            ))
        }
        "enable" => {
            let msg = EnableTfaRequest { secret: text(&b, "secret")?, otp: text(&b, "otp")? };
            auth.enable_tfa(req.grpc(request_id, token, msg)?).await?;
            Ok(reply::no_content())
        }
        "disable" => {
            let msg = DisableTfaRequest { otp: text(&b, "otp")? };
            auth.disable_tfa(req.grpc(request_id, token, msg)?).await?;
            Ok(reply::no_content())
        }
        _ => Err(not_found(req)),
    }
}
