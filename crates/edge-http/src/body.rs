//! Request bodies, read only by the routes that need one and never past MAX_PAYLOAD_SIZE.

use bytes::Bytes;
use cdapi_proto::{ApiError, ErrorCode};

/// A request body as a stream of `Bytes` chunks.
pub type Body = std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<Bytes, warp::Error>> + Send>>;

/// warp's body stream (`warp::body::stream()`) as a [`Body`].
pub fn boxed(body: impl futures_util::Stream<Item = Result<impl bytes::Buf, warp::Error>> + Send + 'static) -> Body {
    use futures_util::StreamExt;
    Box::pin(body.map(|chunk| chunk.map(|mut b| b.copy_to_bytes(b.remaining()))))
}

/// Most bytes of a refused body read and thrown away after its 413 (16 MiB), and for how long
/// (10 s): enough for a client still sending to finish and read the answer (a lingering
/// close), never more; past either the connection is dropped.
const DRAIN_BYTES: usize = 16 << 20;
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(10);

/// `body` when its declared length (`Content-Length`) is at most `max`; otherwise 413
/// CONTENT_TOO_LARGE at once, without reading it: the body is drained in the background,
/// discarded chunk by chunk (see [`DRAIN_BYTES`]), so a flood of oversized uploads costs no
/// memory and the client still gets the 413 body rather than a reset connection.
pub fn refuse_oversized(headers: &http::HeaderMap, body: Body, max: u64) -> Result<Body, ApiError> {
    let declared = headers.get(http::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    match declared {
        Some(n) if n > max => {
            tokio::spawn(drain(body));
            Err(ApiError::new(ErrorCode::ContentTooLarge, format!("The request body is larger than {max} bytes.")))
        }
        _ => Ok(body),
    }
}

async fn drain(mut body: Body) {
    use futures_util::StreamExt;
    let deadline = tokio::time::Instant::now() + DRAIN_TIME;
    let mut read = 0usize;
    while let Ok(Some(Ok(chunk))) = tokio::time::timeout_at(deadline, body.next()).await {
        read += chunk.len();
        if read > DRAIN_BYTES {
            break;
        }
    }
}

/// Reads `body` into memory, refusing more than `max` bytes (413 CONTENT_TOO_LARGE) without
/// buffering the excess. Errors: also INVALID_PAYLOAD when the stream breaks.
pub async fn read_body(mut body: Body, max: u64) -> Result<Bytes, ApiError> {
    use futures_util::StreamExt;
    let mut buf = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| ApiError::invalid_payload(format!("The body could not be read: {e}")))?;
        if (buf.len() + chunk.len()) as u64 > max {
            return Err(ApiError::new(ErrorCode::ContentTooLarge, format!("The request body is larger than {max} bytes.")));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(buf))
}

/// The media type of the request's Content-Type, lowercased, without parameters (`""` when
/// absent or not text).
pub fn media_type(headers: &http::HeaderMap) -> String {
    let content_type = headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

/// Errors: UNSUPPORTED_MEDIA_TYPE unless the request's Content-Type is `application/json` (the
/// JSON body rule of both edges).
pub fn require_json(headers: &http::HeaderMap) -> Result<(), ApiError> {
    if media_type(headers) == "application/json" {
        Ok(())
    } else {
        Err(ApiError::new(ErrorCode::UnsupportedMediaType, "Unsupported media type: the body must be application/json."))
    }
}

/// A JSON body, read within `max` bytes. Errors: as [`require_json`] and [`read_body`];
/// INVALID_PAYLOAD when the bytes are not JSON.
pub async fn read_json(headers: &http::HeaderMap, body: Body, max: u64) -> Result<serde_json::Value, ApiError> {
    require_json(headers)?;
    let bytes = read_body(body, max).await?;
    parse_json(&bytes)
}

/// A JSON query body (`SEARCH`), read within `max` bytes and refused before it is parsed when
/// it holds more than `max_nodes` objects and arrays (QUERY_MAX_NODES): parsing a JSON body
/// costs about a millisecond per thousand of them, so a 720 KB filter of 20,000 conditions cost
/// the edge 30 ms of CPU before the core could refuse it; scanning it costs a fraction of one.
/// Errors: as [`read_json`]; INVALID_QUERY past `max_nodes`.
pub async fn read_json_query(headers: &http::HeaderMap, body: Body, max: u64, max_nodes: usize) -> Result<serde_json::Value, ApiError> {
    require_json(headers)?;
    let bytes = read_body(body, max).await?;
    if json_nodes(&bytes) > max_nodes {
        return Err(ApiError::invalid_query(format!("The query holds more than {max_nodes} JSON objects and arrays (QUERY_MAX_NODES); split it")));
    }
    parse_json(&bytes)
}

/// How many objects and arrays `bytes` opens (`{` and `[` outside strings), counted without
/// parsing; for text that is not JSON, a number that [`parse_json`] then refuses anyway.
pub fn json_nodes(bytes: &[u8]) -> usize {
    let (mut nodes, mut in_string, mut escaped) = (0usize, false, false);
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        } else if b == b'{' || b == b'[' {
            nodes += 1;
        }
    }
    nodes
}

/// `bytes` as JSON. Errors: INVALID_PAYLOAD, saying why.
pub fn parse_json(bytes: &[u8]) -> Result<serde_json::Value, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::invalid_payload(format!("The body is not valid JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::json_nodes;

    /// Objects and arrays are counted; brackets and escaped quotes inside strings are not.
    #[test]
    fn json_nodes_counts_objects_and_arrays_outside_strings() {
        assert_eq!(json_nodes(br#"{"query":{"filter":{"_and":[{"a":{"_eq":1}},{"b":{"_in":[1,2]}}]}}}"#), 9);
        assert_eq!(json_nodes(br#"{"title":{"_contains":"{[ \" {[ \\"}}"#), 2);
        assert_eq!(json_nodes(b"[]"), 1);
        assert_eq!(json_nodes(b"\"{\""), 0);
    }
}
