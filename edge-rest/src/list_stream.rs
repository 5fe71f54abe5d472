//! Long lists streamed (issue 21: flat memory at any `limit`): a list read whose `limit` is over
//! REST_STREAM_LIMIT (or `-1`) is asked of the core as `ItemsService.ReadStream`, and its items
//! are written to the client as they arrive, inside the same `{"meta": ..., "data": [...]}`
//! envelope as any list.
//!
//! Errors after the first byte: see [`edge_http::list_chunks`].

use crate::reply;
use crate::request::EdgeState;
use bytes::Bytes;
use cdapi_proto::ApiError;
use cdapi_proto::v1::{ReadChunk, ReadRequest};
use edge_http::list_chunks::{BUFFER, array, separated};
use warp::reply::Response;

/// The list (or, when the core answers a read that is not a list, that answer). Errors: the
/// core's, before the first byte.
pub async fn read(state: &EdgeState, call: tonic::Request<ReadRequest>) -> Result<Response, ApiError> {
    let mut stream = state.items.clone().read_stream(call).await?.into_inner();
    let mut meta = Bytes::new();
    let mut parts: Vec<Bytes> = Vec::new();
    let mut size = 0;
    let mut first = true;
    while size < BUFFER {
        let Some(ReadChunk { data, meta: m, whole }) = stream.message().await? else {
            return Ok(reply::data(&array(&parts), &meta));
        };
        if whole {
            return Ok(reply::data(&data, &m));
        }
        if std::mem::take(&mut first) {
            meta = m;
        }
        size += data.len();
        if !data.is_empty() {
            parts.push(data);
        }
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    let head = if meta.is_empty() { "{\"data\":[".to_owned() } else { format!("{{\"meta\":{},\"data\":[", String::from_utf8_lossy(&meta)) };
    tokio::spawn(async move {
        let mut sent_items = false;
        let mut pieces = vec![Bytes::from(head)];
        for p in parts {
            pieces.extend(separated(&mut sent_items, p));
        }
        for p in pieces {
            if tx.send(Ok(p)).await.is_err() {
                return;
            }
        }
        loop {
            match stream.message().await {
                Ok(Some(c)) => {
                    for p in separated(&mut sent_items, c.data) {
                        if tx.send(Ok(p)).await.is_err() {
                            return; // the client went away
                        }
                    }
                }
                Ok(None) => {
                    let _ = tx.send(Ok(Bytes::from_static(b"]}"))).await;
                    return;
                }
                Err(s) => {
                    let e = ApiError::from(s);
                    tracing::error!(code = ?e.code, message = %e.message, "a streamed list failed after its first byte: the response is cut off");
                    let _ = tx.send(Err(std::io::Error::other("list failed"))).await;
                    return;
                }
            }
        }
    });
    let mut res = warp::reply::Reply::into_response(warp::reply::stream(tokio_stream::wrappers::ReceiverStream::new(rx)));
    res.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json; charset=utf-8"));
    Ok(res)
}
