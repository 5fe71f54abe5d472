//! Item reads through the edge cache ([`edge_http::edge_cache`]; docs/scaling.md "The edge
//! cache"): answered from this edge's memory when a fresh answer is kept for the same token,
//! client address, path and query; else read from the core, and kept when the core marks the
//! answer. Without the edge cache, or with `Cache-Control: no-store`, a plain read.

use crate::reply;
use crate::request::{EdgeState, HttpRequest};
use cdapi_proto::ApiError;
use cdapi_proto::edge_feed::ASK_METADATA;
use cdapi_proto::v1::ReadRequest;
use edge_http::caller::Caller;
use edge_http::edge_cache::EdgeCache;
use warp::reply::Response;

/// Reads `msg` for `caller` (see the module docs). Errors: the core's.
pub(crate) async fn read(state: &EdgeState, req: &HttpRequest, caller: Caller, msg: ReadRequest) -> Result<Response, ApiError> {
    let Some(cache) = state.edge_cache.as_ref().filter(|_| !EdgeCache::skipped(&req.headers)) else {
        let res = state.items.clone().read(caller.request(msg)?).await?;
        return Ok(reply::data(&res.get_ref().data, &res.get_ref().meta));
    };
    let key = EdgeCache::key(&caller, &req.path, &req.query);
    if let Some((data, meta)) = cache.lookup(&key) {
        return Ok(reply::data(&data, &meta));
    }
    // Taken before the request leaves: a write announced meanwhile keeps the answer out.
    let ticket = cache.ticket();
    let mut call = caller.request(msg)?;
    call.metadata_mut().insert(ASK_METADATA, tonic::metadata::MetadataValue::from_static("1"));
    let res = state.items.clone().read(call).await?;
    let response = reply::data(&res.get_ref().data, &res.get_ref().meta);
    if let Some(ticket) = ticket {
        cache.store(key, ticket, res.metadata(), res.get_ref().data.clone(), res.get_ref().meta.clone());
    }
    Ok(response)
}
