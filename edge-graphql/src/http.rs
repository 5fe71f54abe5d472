//! The HTTP side: `POST /graphql` and `/graphql/system` with a JSON body `{query, variables?,
//! operationName?}` (or `application/graphql` text), `GET` with the same as query parameters,
//! plus `/server/health`, `/server/ping`, and the schemas as SDL on `/server/specs/graphql` and
//! `/server/specs/graphql/system` (Directus's paths). The token travels as on REST
//! (docs/authentication.md).
//!
//! `GET` runs queries only (a mutation over GET is 405, GraphQL over HTTP).
//!
//! Replies: the GraphQL response, HTTP 200, errors inside it with `extensions.code` (Directus's
//! error codes); a request that does not parse or validate is 400 with code `GRAPHQL_VALIDATION`, as
//! Directus answers. Failures before GraphQL (no schema yet, bad body) use Directus's error body.

use crate::cache::SchemaCache;
use crate::documents::Documents;
use crate::prerendered::Prerendered;
use crate::response_json::{error_json, response_body, with_codes};
use crate::schemas::Endpoint;
use crate::{RequestData, config::Settings};
use async_graphql::Variables;
use async_graphql::parser::types::ExecutableDocument;
use cdapi_proto::{ApiError, ErrorCode};
use edge_http::caller::{Caller, RequestIds};
use edge_http::cookies::{Kind, get as cookie};
use edge_http::reply::{method_not_allowed, with_body};
use http::{HeaderMap, Method, StatusCode};
use serde_json::Value as Json;
use std::sync::Arc;
use warp::reply::Response;

/// The handler of every request (given to `edge_http::serve::run`): request id, span, metrics
/// and error body around [`route`]. `/server/health` answers 503 once `readiness` is off
/// (shutdown began).
pub fn handler(
    cache: Arc<SchemaCache>,
    settings: Arc<Settings>,
    readiness: service_runtime::shutdown::Readiness,
) -> impl Fn(edge_http::serve::Incoming) -> std::pin::Pin<Box<dyn std::future::Future<Output = Response> + Send>> + Clone + Send + Sync + 'static {
    let ids = Arc::new(RequestIds::default());
    let documents = Arc::new(Documents::default());
    let connections = edge_http::websocket::Connections::new(settings.websocket.max_connections, settings.websocket.max_connections_per_user);
    move |mut i: edge_http::serve::Incoming| {
        let (cache, settings, ids, readiness, connections, documents) =
            (cache.clone(), settings.clone(), ids.clone(), readiness.clone(), connections.clone(), documents.clone());
        Box::pin(async move {
            let request_id = ids.next(&i.headers);
            let work = async {
                if readiness.is_stopping() && i.path.trim_end_matches('/') == "/server/health" {
                    return Ok(with_body(StatusCode::SERVICE_UNAVAILABLE, "application/health+json", r#"{"status":"error"}"#));
                }
                if let Some(handshake) = i.websocket.take().filter(|_| settings.websocket.enabled && i.path.trim_end_matches('/') == "/graphql") {
                    let token = form_urlencoded::parse(i.query.as_bytes()).find(|(k, _)| k == "access_token").map(|(_, v)| v.into_owned());
                    let session_cookie = cookie(&i.headers, settings.edge.cookies.name(Kind::Session));
                    let caller = Caller::new(&i.headers, token, session_cookie, settings.edge.client_ip.resolve(i.peer, &i.headers), request_id.clone())?;
                    return crate::ws::upgrade(cache.clone(), settings.clone(), connections, handshake, &i.headers, caller, readiness.clone()).await;
                }
                route(&cache, &settings, &documents, &i.method, &i.path, &i.query, &i.headers, i.peer, i.body, &request_id).await
            };
            edge_http::observe::answer(&i.method, &i.path, &i.headers, &request_id, work).await
        })
    }
}

#[allow(clippy::too_many_arguments)]
async fn route(
    cache: &SchemaCache,
    settings: &Settings,
    documents: &Documents,
    method: &Method,
    path: &str,
    query: &str,
    headers: &HeaderMap,
    peer: Option<std::net::SocketAddr>,
    body: edge_http::body::Body,
    request_id: &str,
) -> Result<Response, ApiError> {
    edge_http::settings::check_query_string(query, settings.edge.max_query_string_size)?;
    let body = edge_http::body::refuse_oversized(headers, body, settings.edge.max_payload_size)?;
    let endpoint = match path.trim_end_matches('/') {
        "/graphql" => Endpoint::User,
        "/graphql/system" => Endpoint::System,
        "/server/specs/graphql" | "/server/specs/graphql/system" => {
            let params: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes()).into_owned().collect();
            let token = params.into_iter().find(|(n, _)| n == "access_token").map(|(_, v)| v);
            let session_cookie = cookie(headers, settings.edge.cookies.name(Kind::Session));
            let caller = Caller::new(headers, token, session_cookie, settings.edge.client_ip.resolve(peer, headers), request_id.to_owned())?;
            let built = cache.for_caller(&caller).await?;
            let schema = if path.trim_end_matches('/').ends_with("/system") { &built.system } else { &built.user };
            return Ok(with_body(StatusCode::OK, "application/graphql; charset=utf-8", schema.sdl()));
        }
        "/server/ping" => return Ok(with_body(StatusCode::OK, "text/html; charset=utf-8", "pong")),
        "/server/health" => {
            let (status, body) = match cache.current() {
                Some(_) => (StatusCode::OK, r#"{"status":"ok"}"#),
                None => (StatusCode::SERVICE_UNAVAILABLE, r#"{"status":"error"}"#),
            };
            return Ok(with_body(status, "application/health+json", body));
        }
        _ => return Err(ApiError::new(ErrorCode::RouteNotFound, format!("Route {path} doesn't exist."))),
    };
    let params: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes()).into_owned().collect();
    let param = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let (text, variables, operation) = match *method {
        Method::GET => (param("query").unwrap_or_default(), param("variables"), param("operationName")),
        Method::POST => post_body(headers, &edge_http::body::read_body(body, settings.edge.max_payload_size).await?)?,
        _ => {
            return Ok(method_not_allowed(method, "GET, POST"));
        }
    };
    if text.trim().is_empty() {
        return Err(ApiError::invalid_payload("A GraphQL request needs a \"query\""));
    }
    // The document's caps come first: a refused document costs no schema lookup and no call.
    if let Err(message) = settings.document.check(&text, None) {
        return Ok(validation_error(message));
    }
    // A kept document (the text is hashed once, for the lookup and for keeping it).
    let document_key = documents.key(&text);
    let (document, to_keep) = match document_key.and_then(|k| documents.get(k)) {
        Some(doc) => (Some(doc), None),
        None => {
            let document = async_graphql::parser::parse_query(&text).ok();
            if let Err(message) = settings.document.check(&text, document.as_ref()) {
                return Ok(validation_error(message));
            }
            (document.map(Arc::new), document_key)
        }
    };
    if *method == Method::GET && document.as_ref().is_some_and(|d| is_mutation(d, operation.as_deref())) {
        // GraphQL over HTTP: GET must not change anything.
        return Ok(method_not_allowed(method, "POST"));
    }
    let raw_variables = variables.filter(|v| !v.trim().is_empty());
    let mut variables = match &raw_variables {
        None => Variables::default(),
        Some(v) => Variables::from_json(serde_json::from_str(v).map_err(|e| ApiError::invalid_payload(format!("\"variables\" is not valid JSON: {e}")))?),
    };
    let session_cookie = cookie(headers, settings.edge.cookies.name(Kind::Session));
    let caller = Caller::new(headers, param("access_token"), session_cookie.clone(), settings.edge.client_ip.resolve(peer, headers), request_id.to_owned())?;
    // The schema of what this caller's role may read (docs/graphql.md; Directus per role).
    let built = cache.for_caller(&caller).await?;
    let operation = operation.filter(|o| !o.is_empty());
    with_defaults(document.as_deref(), operation.as_deref(), &mut variables);
    let key = built.validated.key(&text, raw_variables.as_deref(), operation.as_deref());
    let validated = built.validated.contains(key);
    let streams = crate::list_stream::ListStreams::new(settings.stream_limit, settings.stream_lists_max);
    let prerendered = Arc::new(Prerendered::default());
    let data = RequestData {
        caller,
        refresh_cookie: cookie(headers, settings.edge.cookies.name(Kind::Refresh)),
        session_cookie,
        document: document.clone(),
        variables: variables.clone(),
        operation_name: operation.clone(),
        streams: Some(streams.clone()),
        prerendered: prerendered.clone(),
    };
    if let Some(roots) = built.fast.as_ref().filter(|_| endpoint == Endpoint::User && validated)
        && let Some(body) = crate::direct::respond(roots, &built.model, cache.backend(), &data, &streams).await
    {
        service_runtime::metrics::global().graphql_answered("direct");
        return Ok(with_body(StatusCode::OK, "application/json; charset=utf-8", body));
    }
    let mut request = async_graphql::Request::new(text).variables(variables.clone());
    if let Some(doc) = &document {
        request.set_parsed_query(ExecutableDocument::clone(doc));
    }
    if let Some(op) = &operation {
        request = request.operation_name(op.clone());
    }
    let request = request.data(data);
    let schema = match endpoint {
        Endpoint::User => &built.user,
        Endpoint::System => &built.system,
    };
    let mut response = schema.execute(request).await;
    if let (Some(key), Some(doc)) = (to_keep.filter(|_| response.errors.is_empty()), &document) {
        // Kept once it ran without error: a client cannot fill the cache with documents
        // that do not run.
        documents.insert(key, doc.clone());
    }
    if endpoint == Endpoint::User {
        service_runtime::metrics::global().graphql_answered("executor");
        if response.errors.is_empty() && !validated {
            // Valid for this build: it may be answered without the executor next time.
            built.validated.insert(key);
        }
    }
    if let (Some(doc), async_graphql::Value::Object(data)) = (&document, &mut response.data) {
        order_root(doc, operation.as_deref(), data);
    }
    match document {
        // Long lists: the response is written with their items as they arrive.
        Some(document) if streams.any() => {
            let headers = response.http_headers.clone();
            let (_, body) = rendered(response, Some(&prerendered));
            let selection = crate::list_stream::Selection { model: built.model.clone(), document, operation, variables };
            Ok(with_headers(crate::list_stream::respond(body, &streams, selection).await?, &headers))
        }
        _ => Ok(render(response, Some(&prerendered))),
    }
}

/// Gives each variable of the operation a request does not send its default value, as
/// GraphQL's CoerceVariableValues does. async-graphql applies defaults to arguments but not to
/// `@skip(if:)`/`@include(if:)` (it reads only the variables sent), so without this a
/// `@include(if: $all)` with `$all: Boolean = true` would leave the field out.
fn with_defaults(doc: Option<&ExecutableDocument>, operation: Option<&str>, variables: &mut Variables) {
    let Some(op) = doc.and_then(|d| crate::selection::operation(d, operation)) else { return };
    for def in &op.variable_definitions {
        let name = &def.node.name.node;
        if !variables.contains_key(name)
            && let Some(value) = def.node.default_value()
        {
            variables.insert(name.clone(), value.clone());
        }
    }
}

/// Puts the root fields of `data` in the order the operation selects them. async-graphql
/// resolves the root fields of a query concurrently and keeps them in the order they finish;
/// GraphQL (and Directus) answer in selection order.
fn order_root(
    doc: &async_graphql::parser::types::ExecutableDocument,
    operation: Option<&str>,
    data: &mut async_graphql::indexmap::IndexMap<async_graphql::Name, async_graphql::Value>,
) {
    use async_graphql::parser::types::{Selection, SelectionSet};
    fn keys<'d>(doc: &'d async_graphql::parser::types::ExecutableDocument, set: &'d SelectionSet, out: &mut Vec<&'d str>, depth: usize) {
        if depth > 32 {
            return;
        }
        for item in &set.items {
            match &item.node {
                Selection::Field(f) => out.push(f.node.response_key().node.as_str()),
                Selection::InlineFragment(i) => keys(doc, &i.node.selection_set.node, out, depth + 1),
                Selection::FragmentSpread(s) => {
                    if let Some(fragment) = doc.fragments.get(&s.node.fragment_name.node) {
                        keys(doc, &fragment.node.selection_set.node, out, depth + 1);
                    }
                }
            }
        }
    }
    let Some(op) = crate::selection::operation(doc, operation) else { return };
    let mut order = Vec::new();
    keys(doc, &op.selection_set.node, &mut order, 0);
    let mut sorted = async_graphql::indexmap::IndexMap::with_capacity(data.len());
    for key in order {
        if let Some((k, v)) = data.shift_remove_entry(key) {
            sorted.insert(k, v);
        }
    }
    sorted.extend(data.drain(..));
    *data = sorted;
}

/// A document refused before it ran: the GraphQL response `{"errors": [...]}` with code
/// GRAPHQL_VALIDATION and status 400, as for a document that does not validate.
fn validation_error(message: String) -> Response {
    render(async_graphql::Response::from_errors(vec![async_graphql::ServerError::new(message, None)]), None)
}

/// Whether the operation a request would run (the named one, or the only one) is a mutation.
fn is_mutation(doc: &async_graphql::parser::types::ExecutableDocument, operation: Option<&str>) -> bool {
    crate::selection::operation(doc, operation).is_some_and(|op| op.ty == async_graphql::parser::types::OperationType::Mutation)
}

/// `{query, variables, operationName}` from a POST body. Errors: UNSUPPORTED_MEDIA_TYPE for
/// bodies other than JSON and `application/graphql`, INVALID_PAYLOAD for malformed JSON.
fn post_body(headers: &HeaderMap, body: &[u8]) -> Result<(String, Option<String>, Option<String>), ApiError> {
    match edge_http::body::media_type(headers).as_str() {
        "application/json" => {
            let Json::Object(obj) = edge_http::body::parse_json(body)? else {
                return Err(ApiError::invalid_payload("The body must be an object {\"query\": ...}"));
            };
            let text = |k: &str| -> Result<Option<String>, ApiError> {
                match obj.get(k) {
                    None | Some(Json::Null) => Ok(None),
                    Some(Json::String(s)) => Ok(Some(s.clone())),
                    Some(Json::Object(o)) if k == "variables" => Ok(Some(Json::Object(o.clone()).to_string())),
                    Some(_) => Err(ApiError::invalid_payload(format!("\"{k}\" has the wrong type"))),
                }
            };
            Ok((text("query")?.unwrap_or_default(), text("variables")?, text("operationName")?))
        }
        "application/graphql" => Ok((String::from_utf8_lossy(body).into_owned(), None, None)),
        _ => Err(ApiError::new(ErrorCode::UnsupportedMediaType, "Unsupported media type: send application/json or application/graphql.")),
    }
}

/// Directus's body for a document that does not parse or validate: one error
/// `GRAPHQL_VALIDATION` whose `extensions.errors` lists each GraphQL error (`message`,
/// `locations`), and no `data`.
fn validation_body(errors: &[async_graphql::ServerError]) -> Result<String, serde_json::Error> {
    let list = errors.iter().map(|e| error_json(e, false)).collect::<Result<Vec<_>, _>>()?;
    Ok(format!(r#"{{"errors":[{{"message":"GraphQL validation error.","extensions":{{"errors":[{}],"code":"GRAPHQL_VALIDATION"}}}}]}}"#, list.join(",")))
}

/// The GraphQL response as HTTP: every error gets a `code` (GRAPHQL_VALIDATION for parse and
/// validation errors, INTERNAL_SERVER_ERROR for unexpected ones); 400 when nothing ran. The
/// response is serialised once, straight to bytes.
fn render(response: async_graphql::Response, prerendered: Option<&Prerendered>) -> Response {
    let headers = response.http_headers.clone();
    let (status, body) = rendered(response, prerendered);
    with_headers(with_body(status, "application/json; charset=utf-8", body), &headers)
}

/// `res` with the headers the operation set (`Set-Cookie` of the `auth_*` mutations).
fn with_headers(mut res: Response, headers: &HeaderMap) -> Response {
    for (name, value) in headers.iter() {
        res.headers_mut().append(name, value.clone());
    }
    res
}

/// The status and body of [`render`], with the fields answered as text in place
/// ([`Prerendered::splice`]).
fn rendered(mut response: async_graphql::Response, prerendered: Option<&Prerendered>) -> (StatusCode, String) {
    let not_executed = with_codes(&mut response);
    let validation = not_executed
        && response.errors.iter().all(|e| e.extensions.as_ref().and_then(|x| x.get("code")) == Some(&async_graphql::Value::from("GRAPHQL_VALIDATION")));
    let status = if not_executed { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    let body = if validation { validation_body(&response.errors) } else { response_body(&response) };
    let body = match (body, prerendered) {
        (Ok(body), Some(p)) => p.splice(body),
        (Ok(body), None) => body,
        (Err(e), _) => {
            tracing::error!(error = %e, "a GraphQL response could not be serialised");
            r#"{"data":null,"errors":[{"message":"An unexpected error occurred.","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]}"#.to_owned()
        }
    };
    (status, body)
}
