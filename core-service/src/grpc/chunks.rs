//! Streaming a statement's rows to a gRPC reply in chunks (flat memory at any size; docs/architecture.md "A read, end to end"):
//! rows flow from the database cursor into a buffer that is sent every [`CHUNK`] bytes through
//! a channel of [`DEPTH`] chunks, so a reply's memory is bounded by `CHUNK × DEPTH` whatever its
//! length. Used by `ExportItems` (NDJSON lines) and `ReadStream` (a list's items).
//!
//! A stream holds a pooled connection while its cursor runs, so it runs only with a place of
//! [`super::stream_budget`], and a chunk its reader does not take within STREAM_STALL_TIMEOUT_MS
//! ends the stream: the cursor is dropped and its connection given back (a reader that stopped
//! reading never holds one for longer). Chunks are sent at the caller's pace
//! (STREAM_BYTES_PER_SECOND, STREAM_BYTES_PER_SECOND_PUBLIC).

use super::stream_budget::StreamPass;
use crate::sql::Sql;
use bytes::Bytes;
use cdapi_proto::ApiError;
use futures_util::StreamExt;
use sqlx::postgres::PgRow;
use std::time::Duration;
use tokio::sync::mpsc;
use tonic::Status;
use tracing::Instrument;

/// Bytes gathered before a chunk is sent (64 KiB).
pub const CHUNK: usize = 64 * 1024;

/// Chunks waiting for the client before the cursor pauses.
pub const DEPTH: usize = 4;

/// How one kind of stream writes its rows and wraps its chunks.
pub trait Rows: Send + 'static {
    /// The gRPC message of one chunk.
    type Chunk: Send + 'static;
    /// Whether a stream with no row still sends one (empty) chunk, e.g. for a list's counts.
    const ALWAYS_ONE: bool;
    /// Appends `row` to `buf`. Errors end the stream with that error (a column that cannot be
    /// read, a budget passed).
    fn row(&mut self, row: &PgRow, buf: &mut Vec<u8>) -> Result<(), ApiError>;
    /// Wraps `data` (whole rows) as the next message.
    fn chunk(&mut self, data: Bytes) -> Self::Chunk;
}

/// Runs `sql` on `pool` in a task of its own, holding `pass` until it ends and sending at its
/// caller's pace ([`StreamPass::pace`]), and returns the
/// receiving end of its chunks; a database error or [`Rows::row`]'s error is the stream's last
/// item. The task stops when the client goes away (the receiver is dropped) or takes no chunk
/// for `stall` (logged; the client sees the stream end without its last chunk).
pub fn pump<R: Rows>(
    pool: sqlx::PgPool,
    sql: Sql,
    mut rows: R,
    pass: StreamPass,
    stall: Duration,
    span: tracing::Span,
) -> mpsc::Receiver<Result<R::Chunk, Status>> {
    let (tx, rx) = mpsc::channel(DEPTH);
    tokio::spawn(
        async move {
            let mut cursor = sql.query().fetch(&pool);
            let mut buf = Vec::with_capacity(CHUNK + 4096);
            let mut sent = false;
            while let Some(row) = cursor.next().await {
                let written = row.map_err(crate::db::map_error).and_then(|row| rows.row(&row, &mut buf));
                if let Err(e) = written {
                    let _ = tx.send(Err(e.into())).await;
                    return;
                }
                if buf.len() >= CHUNK {
                    pass.pace(buf.len()).await;
                    let chunk = rows.chunk(Bytes::from(std::mem::replace(&mut buf, Vec::with_capacity(CHUNK + 4096))));
                    match tokio::time::timeout(stall, tx.send(Ok(chunk))).await {
                        Ok(Ok(())) => {}
                        Ok(Err(_)) => return, // the client went away
                        Err(_) => {
                            tracing::warn!(stall_ms = stall.as_millis() as u64, "a stream's reader took no chunk in STREAM_STALL_TIMEOUT_MS: ended");
                            return;
                        }
                    }
                    sent = true;
                }
            }
            if !buf.is_empty() || (R::ALWAYS_ONE && !sent) {
                pass.pace(buf.len()).await;
                let _ = tokio::time::timeout(stall, tx.send(Ok(rows.chunk(Bytes::from(buf))))).await;
            }
        }
        .instrument(span),
    );
    rx
}
