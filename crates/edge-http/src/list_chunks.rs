//! What both edges' streamed lists share (flat memory at any `limit`; docs/architecture.md): which lists
//! are streamed, how many bytes are gathered before the response starts, and how the chunks of
//! `ItemsService.ReadStream` (items separated by commas, no brackets) join into one array.
//! edge-rest wraps them in `{"meta", "data"}`; edge-graphql splices them into the GraphQL
//! response.
//!
//! The rule for errors (both edges): the first [`BUFFER`] bytes are gathered before anything is
//! sent, so a list that fits, and any error that comes before that, is answered as usual. An
//! error after the first byte was sent cannot change the status any more: the body is cut off
//! (the chunked body ends without its last chunk, the connection closes), so a client sees a
//! broken transfer, never a truncated body that parses; the edge logs the error.

use bytes::Bytes;
use cdapi_proto::ApiError;
use cdapi_proto::v1::Query;
use futures_util::StreamExt as _;
use warp::reply::Response;

/// Bytes gathered before the response starts (256 KiB).
pub const BUFFER: usize = 256 * 1024;

/// Whether a list asked with `query` is streamed: its `limit` is `-1` or over `stream_limit`
/// (REST_STREAM_LIMIT, GRAPHQL_STREAM_LIMIT; `0` = never).
pub fn wanted(query: &Query, stream_limit: i64) -> bool {
    stream_limit > 0 && query.limit.is_some_and(|l| l < 0 || l > stream_limit)
}

/// A chunk's items, after a comma when items were sent before it (nothing for an empty chunk).
pub fn separated(sent_items: &mut bool, data: Bytes) -> Vec<Bytes> {
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
pub fn array(parts: &[Bytes]) -> Vec<u8> {
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

/// What a producer task writes a streamed body through: its bytes in order, or the error
/// that ends it.
pub type Pieces = tokio::sync::mpsc::Receiver<Result<Bytes, ApiError>>;

/// The JSON response whose body a producer writes through `pieces` (status 200), by the rule of
/// this module: the first [`BUFFER`] bytes are gathered, so a body that ends within them is
/// answered whole (with its length); past them it is streamed, and a later error cuts it off
/// and is logged (`list`: which edge's list, for the log). Errors: one the producer sent before
/// [`BUFFER`] bytes.
pub async fn respond(mut pieces: Pieces, list: &'static str) -> Result<Response, ApiError> {
    let mut gathered: Vec<u8> = Vec::new();
    while gathered.len() < BUFFER {
        match pieces.recv().await {
            Some(Ok(b)) => gathered.extend_from_slice(&b),
            Some(Err(e)) => return Err(e),
            None => return Ok(crate::reply::with_body(http::StatusCode::OK, "application/json; charset=utf-8", gathered)),
        }
    }
    let first = futures_util::stream::iter([Ok::<Bytes, std::io::Error>(Bytes::from(gathered))]);
    let rest = futures_util::stream::poll_fn(move |cx| pieces.poll_recv(cx)).map(move |r| {
        r.map_err(|e| {
            tracing::error!(list, code = ?e.code, message = %e.message, cause = e.cause.as_deref().map_or("-", String::as_str), "a streamed list failed after its first byte: the response is cut off");
            std::io::Error::other("list failed")
        })
    });
    let mut res = warp::reply::Reply::into_response(warp::reply::stream(first.chain(rest)));
    res.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json; charset=utf-8"));
    Ok(res)
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
