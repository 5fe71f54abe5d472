//! Long lists streamed (issue 21: flat memory at any `limit`): a list read whose `limit` is over
//! REST_STREAM_LIMIT (or `-1`) is asked of the core as `ItemsService.ReadStream`, and its items
//! are written to the client as they arrive, inside the same `{"meta": ..., "data": [...]}`
//! envelope as any list.
//!
//! Errors: the first [`BUFFER`] bytes are gathered before anything is sent, so a list that
//! fits, and any error that comes before that, is answered as usual (an error body with its
//! status). An error after the first byte was sent (the database failing mid-list, or the list
//! passing RESPONSE_MAX_BYTES) cannot change the status any more: the body is cut off (the
//! chunked body ends without its last chunk, the connection closes), so a client sees a broken
//! transfer, never a truncated body that parses; the edge logs the error.

use crate::reply;
use crate::request::EdgeState;
use bytes::Bytes;
use cdapi_proto::ApiError;
use cdapi_proto::v1::{Query, ReadChunk, ReadRequest};
use warp::reply::Response;

/// Bytes gathered before the response starts (256 KiB).
pub const BUFFER: usize = 256 * 1024;

/// Whether a list asked with `query` is streamed: its `limit` is `-1` or over `stream_limit`
/// (REST_STREAM_LIMIT; `0` = never).
pub fn wanted(query: &Query, stream_limit: i64) -> bool {
    stream_limit > 0 && query.limit.is_some_and(|l| l < 0 || l > stream_limit)
}

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

/// A chunk's items, after a comma when items were sent before it (nothing for an empty chunk).
fn separated(sent_items: &mut bool, data: Bytes) -> Vec<Bytes> {
    if data.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(2);
    if std::mem::replace(sent_items, true) {
        out.push(Bytes::from_static(b","));
    }
    out.push(data);
    out
}

/// `[` + the parts joined by commas + `]`.
fn array(parts: &[Bytes]) -> Vec<u8> {
    let mut out = Vec::with_capacity(parts.iter().map(Bytes::len).sum::<usize>() + parts.len() + 2);
    out.push(b'[');
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(p);
    }
    out.push(b']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_long_lists_are_streamed() {
        let q = |limit: Option<i64>| Query { limit, ..Query::default() };
        assert!(wanted(&q(Some(-1)), 1000));
        assert!(wanted(&q(Some(1001)), 1000));
        assert!(!wanted(&q(Some(1000)), 1000));
        assert!(!wanted(&q(None), 1000));
        assert!(!wanted(&q(Some(-1)), 0));
    }

    #[test]
    fn chunks_join_into_one_array() {
        let mut sent = false;
        let mut body: Vec<u8> = Vec::new();
        for c in ["{\"id\":1},{\"id\":2}", "", "{\"id\":3}"] {
            for p in separated(&mut sent, Bytes::from(c)) {
                body.extend_from_slice(&p);
            }
        }
        assert_eq!(String::from_utf8_lossy(&body), "{\"id\":1},{\"id\":2},{\"id\":3}");
        assert_eq!(array(&[Bytes::from("1"), Bytes::from("2")]), b"[1,2]");
        assert_eq!(array(&[]), b"[]");
    }
}
