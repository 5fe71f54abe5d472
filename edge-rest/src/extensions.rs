//! Directus's extension routes, for the Data Studio: no extensions are installed here, so
//! `GET /extensions` lists none and `GET /extensions/sources/index.js` (the app extensions
//! bundle the Studio imports at start) is a module exporting an empty list of each app
//! extension type (Directus 11's `APP_EXTENSION_TYPES` and `HYBRID_EXTENSION_TYPES`).

use crate::reply;
use cdapi_proto::ApiError;
use http::{HeaderValue, Method, StatusCode, header};
use warp::reply::Response;

/// The bundle: one empty export per app or hybrid extension type, as Directus names them.
const EMPTY_BUNDLE: &str = "export const interfaces = [];export const displays = [];export const layouts = [];\
export const modules = [];export const panels = [];export const themes = [];export const operations = [];";

/// `/extensions` and `/extensions/sources/index.js`. Errors: ROUTE_NOT_FOUND for other paths
/// (no other chunk exists); 405 for other methods.
pub fn route(method: &Method, rest: &[&str]) -> Result<Response, ApiError> {
    let known = matches!(rest, [] | ["sources", "index.js"]);
    if !known {
        return Err(ApiError::route_not_found(&format!("/extensions/{}", rest.join("/"))));
    }
    if method != Method::GET {
        return Ok(reply::method_not_allowed(method, "GET"));
    }
    Ok(match rest {
        [] => reply::data(b"[]", b""),
        _ => {
            let mut res = reply::with_body(StatusCode::OK, "application/javascript; charset=UTF-8", EMPTY_BUNDLE);
            res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            res
        }
    })
}
