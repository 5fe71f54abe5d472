//! Long lists streamed (flat memory at any `limit`; docs/architecture.md "A read, end to end"): a list read whose `limit` is over
//! REST_STREAM_LIMIT (or `-1`) is asked of the core as `ItemsService.ReadStream`, and its items
//! are written to the client as they arrive, inside the same `{"meta": ..., "data": [...]}`
//! envelope as any list.
//!
//! Errors after the first byte: see [`edge_http::list_chunks`].

use crate::reply;
use crate::request::EdgeState;
use bytes::Bytes;
use cdapi_proto::ApiError;
use cdapi_proto::v1::ReadRequest;
use edge_http::list_chunks::separated;
use warp::reply::Response;

/// The list (or, when the core answers a read that is not a list, that answer). Errors: the
/// core's, before the first byte.
pub async fn read(state: &EdgeState, call: tonic::Request<ReadRequest>) -> Result<Response, ApiError> {
    let mut stream = state.items.clone().read_stream(call).await?.into_inner();
    // The first chunk says whether this is a list (and carries its `meta`).
    let Some(first) = stream.message().await? else { return Ok(reply::data(b"[]", b"")) };
    if first.whole {
        return Ok(reply::data(&first.data, &first.meta));
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, ApiError>>(4);
    tokio::spawn(async move {
        let head = if first.meta.is_empty() { "{\"data\":[".to_owned() } else { format!("{{\"meta\":{},\"data\":[", String::from_utf8_lossy(&first.meta)) };
        let mut sent_items = false;
        let mut pieces = vec![Bytes::from(head)];
        pieces.extend(separated(&mut sent_items, first.data));
        loop {
            for p in pieces.drain(..) {
                if tx.send(Ok(p)).await.is_err() {
                    return; // the client went away
                }
            }
            match stream.message().await {
                Ok(Some(c)) => pieces.extend(separated(&mut sent_items, c.data)),
                Ok(None) => {
                    let _ = tx.send(Ok(Bytes::from_static(b"]}"))).await;
                    return;
                }
                Err(s) => {
                    let _ = tx.send(Err(ApiError::from(s))).await;
                    return;
                }
            }
        }
    });
    edge_http::list_chunks::respond(rx, "REST").await
}
