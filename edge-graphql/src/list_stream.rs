//! Long GraphQL lists streamed (flat memory at any `limit`; docs/architecture.md "A read, end to
//! end"). async-graphql builds a
//! response as one value tree, so a list cannot flow through it. Instead, a root list field on
//! the fast path ([`crate::fast`]) whose `limit` is `-1` or over GRAPHQL_STREAM_LIMIT (default
//! 1000) is asked of the core as `ItemsService.ReadStream`, and the field's value in the
//! executed response is a placeholder: a string holding a random token no data can hold. The
//! response is serialised as usual, and its body is written with each placeholder replaced by
//! the items as they arrive, each built from the field's selection set as the fast path builds
//! it. Over WebSocket nothing is streamed.
//!
//! Budgets (docs/security.md): at most GRAPHQL_STREAM_LISTS_MAX (default 4) lists of one
//! request are streamed; a further one is an INVALID_QUERY error at its path. Only the first is
//! asked for while the operation runs; the others are asked for one after another as the body
//! reaches them, so the lists of one request never wait on each other (each open stream holds a
//! database connection and a share of the core channel's flow-control window).
//!
//! Errors: the first list's refusals (FORBIDDEN, INVALID_QUERY, a stream budget) come when it is
//! asked for, so they are GraphQL errors at the field's path. A later list's refusal, and any
//! later error, follows [`edge_http::list_chunks`]: an ordinary error reply within the first
//! 256 KiB of the body, a cut-off body after them.

use crate::Backend;
use crate::model::Model;
use async_graphql::Value;
use async_graphql::parser::types::ExecutableDocument;
use bytes::Bytes;
use cdapi_proto::ApiError;
use cdapi_proto::v1::{Query, ReadChunk, ReadRequest};
use std::sync::{Arc, Mutex};
use warp::reply::Response;

/// Where a streamed list's items come from.
pub enum Source {
    /// A stream asked for while the operation ran.
    Open(Box<tonic::Streaming<ReadChunk>>),
    /// A call made when the body reaches the list.
    Later {
        /// The core clients.
        backend: Arc<Backend>,
        /// The `ReadStream` call (with the caller's metadata).
        call: Box<tonic::Request<ReadRequest>>,
    },
}

impl Source {
    /// The stream, asking for it now if it was not yet. Errors: the core's refusal.
    async fn open(self) -> Result<tonic::Streaming<ReadChunk>, ApiError> {
        match self {
            Source::Open(stream) => Ok(*stream),
            Source::Later { backend, call } => Ok(backend.items.clone().read_stream(*call).await.map_err(|s| ApiError::from_status(&s))?.into_inner()),
        }
    }
}

/// One root list field answered by a stream.
struct StreamedList {
    /// The placeholder's text.
    token: String,
    source: Source,
    collection: String,
    /// The field's response key (alias or name).
    response_key: String,
}

/// What a root list that wants streaming gets ([`ListStreams::claim`]).
pub enum Claim {
    /// The request's first: ask for the stream now.
    First,
    /// A later one, within the budget: ask for it when the body reaches it.
    Later,
    /// Over GRAPHQL_STREAM_LISTS_MAX: refused with this error.
    Over(ApiError),
}

/// The streamed lists of one HTTP request (in [`crate::RequestData`]).
pub struct ListStreams {
    /// GRAPHQL_STREAM_LIMIT (0 = never).
    limit: i64,
    /// GRAPHQL_STREAM_LISTS_MAX.
    max_lists: usize,
    /// Lists claimed so far.
    claimed: std::sync::atomic::AtomicUsize,
    lists: Mutex<Vec<StreamedList>>,
}

impl ListStreams {
    /// Lists asked with a `limit` over `limit` (or `-1`) will be streamed (`0`: none), at most
    /// `max_lists` of them.
    pub fn new(limit: i64, max_lists: usize) -> Arc<Self> {
        Arc::new(Self { limit, max_lists, claimed: Default::default(), lists: Mutex::default() })
    }

    /// Whether a list read with `query` is streamed.
    pub fn wanted(&self, query: &Query) -> bool {
        edge_http::list_chunks::wanted(query, self.limit)
    }

    /// Counts one list that wants streaming against the request's budget.
    pub fn claim(&self) -> Claim {
        match self.claimed.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
            0 => Claim::First,
            n if n < self.max_lists => Claim::Later,
            _ => Claim::Over(ApiError::invalid_query(format!(
                "At most {} long lists (limit -1 or over GRAPHQL_STREAM_LIMIT) may be read in one request (GRAPHQL_STREAM_LISTS_MAX); ask for the others in another request",
                self.max_lists
            ))),
        }
    }

    /// Takes `source` as the value of root field `response_key` (items of `collection`): the
    /// placeholder to answer the field with. `None` when no token could be made (the field is
    /// then read the ordinary way).
    pub fn add(&self, source: Source, collection: &str, response_key: &str) -> Option<Value> {
        let token = format!("\u{0}cdapi-list-{}", edge_http::random::hex128().ok()?);
        let mut lists = self.lists.lock().ok()?;
        lists.push(StreamedList { token: token.clone(), source, collection: collection.to_owned(), response_key: response_key.to_owned() });
        Some(Value::String(token))
    }

    /// Whether any list was streamed.
    pub fn any(&self) -> bool {
        self.lists.lock().is_ok_and(|l| !l.is_empty())
    }
}

/// What building the items needs (owned: the body is written by a task of its own).
pub struct Selection {
    /// The caller's model.
    pub model: Arc<Model>,
    /// The request's document.
    pub document: Arc<ExecutableDocument>,
    /// The operation run.
    pub operation: Option<String>,
    /// The request's variables.
    pub variables: async_graphql::Variables,
}

/// The response whose serialised body is `body` (status 200), with each placeholder of
/// `streams` replaced by its list. Errors: an error before the first byte (the core's, a reply
/// that does not parse).
pub async fn respond(body: String, streams: &ListStreams, selection: Selection) -> Result<Response, ApiError> {
    let mut lists = streams.lists.lock().map(|mut l| std::mem::take(&mut *l)).map_err(ApiError::internal_because)?;
    // In the order their placeholders appear; one that does not (its field nulled) is dropped.
    let quoted = |l: &StreamedList| serde_json::to_string(&l.token).unwrap_or_default();
    lists.retain(|l| body.contains(&quoted(l)));
    lists.sort_by_key(|l| body.find(&quoted(l)));
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, ApiError>>(4);
    // The later lists are read from the spawned task: with the request's consistency token.
    tokio::spawn(edge_http::consistency::carry(write(body, lists, selection, tx)));
    edge_http::list_chunks::respond(rx, "GraphQL").await
}

/// Writes `body` to `tx` with each list's placeholder replaced by its items; an error ends it.
async fn write(body: String, lists: Vec<StreamedList>, selection: Selection, tx: tokio::sync::mpsc::Sender<Result<Bytes, ApiError>>) {
    let mut rest = body.as_str();
    for list in lists {
        let quoted = serde_json::to_string(&list.token).unwrap_or_default();
        let Some(at) = rest.find(&quoted) else { continue };
        if tx.send(Ok(Bytes::copy_from_slice(&rest.as_bytes()[..at]))).await.is_err() {
            return;
        }
        rest = &rest[at + quoted.len()..];
        if let Err(e) = send_items(list, &selection, &tx).await {
            let _ = tx.send(Err(e)).await;
            return;
        }
    }
    let _ = tx.send(Ok(Bytes::copy_from_slice(rest.as_bytes()))).await;
}

/// Sends `[`, the list's items as the field selects them, `]`. Errors: the core's, or a chunk
/// that does not parse (INTERNAL).
async fn send_items(list: StreamedList, s: &Selection, tx: &tokio::sync::mpsc::Sender<Result<Bytes, ApiError>>) -> Result<(), ApiError> {
    let operation = crate::selection::operation(&s.document, s.operation.as_deref())
        .ok_or_else(|| ApiError::internal_because("the streamed operation is not in its document"))?;
    let walker = crate::selection::Walker::of_document(&s.model, &s.document, operation, &s.variables);
    let c = s.model.collection(&list.collection).ok_or_else(|| ApiError::internal_because("the streamed collection is not in the model"))?;
    let fields = crate::projection::root_fields(&walker, &operation.selection_set.node, &list.response_key);
    let sets: Vec<_> = fields.iter().map(|f| &f.selection_set.node).collect();
    let shape = crate::projection::Shape::new(&walker, c, &c.name, &sets, None);
    let mut stream = list.source.open().await?;
    let _ = tx.send(Ok(Bytes::from_static(b"["))).await;
    let mut sent_items = false;
    while let Some(chunk) = stream.message().await? {
        if chunk.data.is_empty() {
            continue;
        }
        let bytes = edge_http::list_chunks::array(&[chunk.data]);
        let text = std::str::from_utf8(&bytes).map_err(ApiError::internal_because)?;
        let mut out = String::with_capacity(text.len());
        let items = crate::projection::parse_list(text).map_err(ApiError::internal_because)?;
        shape.write_items(&items, sent_items, &mut out).map_err(ApiError::internal_because)?;
        sent_items |= !items.is_empty();
        if tx.send(Ok(Bytes::from(out))).await.is_err() {
            return Ok(()); // the client went away
        }
    }
    let _ = tx.send(Ok(Bytes::from_static(b"]"))).await;
    Ok(())
}
