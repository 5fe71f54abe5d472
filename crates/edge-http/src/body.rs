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
