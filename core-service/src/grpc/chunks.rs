//! Streaming a statement's rows to a gRPC reply in chunks (issue 21: flat memory at any size):
//! rows flow from the database cursor into a buffer that is sent every [`CHUNK`] bytes through
//! a channel of [`DEPTH`] chunks, so a reply's memory is bounded by `CHUNK × DEPTH` whatever its
//! length. Used by `ExportItems` (NDJSON lines) and `ReadStream` (a list's items).

use crate::query::sql::Sql;
use bytes::Bytes;
use cdapi_proto::ApiError;
use futures_util::StreamExt;
use sqlx::postgres::PgRow;
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

/// Runs `sql` on `pool` in a task of its own and returns the receiving end of its chunks; a
/// database error or [`Rows::row`]'s error is the stream's last item. The task stops when the
/// client goes away (the receiver is dropped).
pub fn pump<R: Rows>(pool: sqlx::PgPool, sql: Sql, mut rows: R, span: tracing::Span) -> mpsc::Receiver<Result<R::Chunk, Status>> {
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
                    let chunk = rows.chunk(Bytes::from(std::mem::replace(&mut buf, Vec::with_capacity(CHUNK + 4096))));
                    if tx.send(Ok(chunk)).await.is_err() {
                        return; // the client went away
                    }
                    sent = true;
                }
            }
            if !buf.is_empty() || (R::ALWAYS_ONE && !sent) {
                let _ = tx.send(Ok(rows.chunk(Bytes::from(buf)))).await;
            }
        }
        .instrument(span),
    );
    rx
}
