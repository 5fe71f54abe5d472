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
