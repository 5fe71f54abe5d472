//! `/server/info` and `/server/specs/oas` (Directus's paths; docs/directus-compatibility.md).
//!
//! `/server/info` answers Directus's shape: `project` (the settings singleton's public fields,
//! SchemaService `ReadProjectInfo`) for everyone; for a signed-in caller also
//! `rateLimit`, `rateLimitGlobal`, `extensions`, `queryLimit` and `websocket` (Directus's shape:
//! `{rest: {authentication, path}, graphql: {authentication, path}, heartbeat}`, or `false` when
//! off; `graphql` from WEBSOCKETS_GRAPHQL_* as this process read them at start); for an admin also
//! `version`. `queryLimit` reports QUERY_LIMIT_DEFAULT / QUERY_LIMIT_MAX as this process reads
//! them at start (the core's settings of the same names: give both processes the same values).

use crate::request::{EdgeState, HttpRequest, url_query};
use cdapi_proto::ApiError;
use cdapi_proto::v1::{CallerAccessRequest, GetCurrentUserRequest, GetSchemaRequest};
use serde_json::json;
use warp::reply::Response;

/// `GET /server/info`. Errors: the auth service's answer for a bad token.
pub async fn info(state: &EdgeState, req: &HttpRequest, request_id: &str) -> Result<Response, ApiError> {
    let project = state.schema.clone().read_project_info(req.grpc(request_id, None, CallerAccessRequest {})?).await?.into_inner();
    let project: serde_json::Value = serde_json::from_slice(&project.data).map_err(ApiError::internal_because)?;
    let mut data = json!({ "project": project });
    let (_, token) = url_query(req)?;
    let signed_in = token.is_some() || req.headers.contains_key(http::header::AUTHORIZATION) || req.session_cookie.is_some();
    if signed_in {
        let call = req.grpc(request_id, token, GetCurrentUserRequest {})?;
        let user = state.auth.clone().get_current_user(call).await?.into_inner();
        // A share session (no user) sees the project only, as in Directus.
        if user.id.is_empty() {
            return Ok(crate::reply::data(data.to_string().as_bytes(), b""));
        }
        data["rateLimit"] = match state.rate_limit {
            Some((points, secs)) => json!({"points": points, "duration": secs}),
            None => json!(false),
        };
        data["rateLimitGlobal"] = json!(false);
        data["extensions"] = json!({"limit": null});
        data["queryLimit"] = json!({"default": state.query_limit.0, "max": state.query_limit.1});
        let ws = &state.websocket_settings;
        data["websocket"] = if ws.rest.enabled {
            let auth = ws.rest.auth.as_str();
            let heartbeat = ws.rest.heartbeat.map_or(json!(false), |d| json!(d.as_secs()));
            json!({"rest": {"authentication": auth, "path": ws.path}, "graphql": graphql_websocket(state), "heartbeat": heartbeat})
        } else {
            json!(false)
        };
        if user.role.is_some_and(|r| r.admin_access) {
            data["version"] = json!(env!("CARGO_PKG_VERSION"));
        }
    }
    Ok(crate::reply::data(data.to_string().as_bytes(), b""))
}

/// `GET /server/specs/oas`: the OpenAPI document for the caller's role (see
/// [`crate::openapi`]). Errors: the core's answer for a bad token.
pub async fn openapi(state: &EdgeState, req: &HttpRequest, request_id: &str) -> Result<Response, ApiError> {
    let (_, token) = url_query(req)?;
    let call = req.grpc(request_id, token, GetSchemaRequest {})?;
    let snapshot = state.schema.clone().get_schema(call).await?.into_inner();
    let doc = crate::openapi::document(&snapshot, None);
    Ok(crate::reply::with_body(http::StatusCode::OK, "application/json; charset=utf-8", doc.to_string()))
}

/// `websocket.graphql` of `/server/info`: edge-graphql's WebSocket as this process's settings
/// describe it (`WebsocketSettings::graphql`), `false` when off or when no GraphQL service is
/// configured.
fn graphql_websocket(state: &EdgeState) -> serde_json::Value {
    match (&state.graphql, state.websocket_settings.graphql) {
        (Some(_), Some(auth)) => json!({"authentication": auth.as_str(), "path": "/graphql"}),
        _ => json!(false),
    }
}
