//! Queries answered without async-graphql's executor. Once a request (query text, variables,
//! operation name) has run through the executor against one schema build with no error, it
//! is known to be valid for that build: parsing aside, validation and execution depend on
//! nothing else. When the same request comes again and every root field it selects is a
//! fast-path read ([`crate::fast`]), its response is written here: the root fields are planned
//! as the fast path plans them, read from the core concurrently, and written as
//! `{"data":{<key>:<field's JSON>,…}}` in selection order, which is what the executor's
//! response would be. Validation (rules, depth, complexity) and the executor's per-field
//! futures are what this saves.
//!
//! Anything else goes through the executor as before, and so does any request whose direct
//! answer fails at some step (a core error, a list to stream, a field selected twice under one
//! key): its errors are then reported where GraphQL reports them.
//!
//! The validated requests are kept per build (so a schema or permission change forgets them)
//! as 128-bit keyed hashes ([`MAX_VALIDATED`] at most, then the set starts afresh): two
//! SipHash keys drawn at start, which a client cannot learn, so it cannot make an invalid
//! request collide with a validated one.

use crate::fast::{FastRoots, plan, written};
use crate::list_stream::ListStreams;
use crate::model::Model;
use crate::projection::root_groups;
use crate::root::Op;
use crate::selection::{Walker, operation};
use crate::{Backend, RequestData};
use async_graphql::parser::types::OperationType;
use std::collections::HashSet;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash};
use std::sync::Mutex;

/// Most validated requests kept per schema build (16 bytes each).
pub const MAX_VALIDATED: usize = 4096;

/// 128-bit keyed hashes: two SipHash keys drawn when made, which a client cannot learn, so it
/// cannot make two different texts share a hash.
#[derive(Default)]
pub struct KeyedHash(RandomState, RandomState);

impl KeyedHash {
    /// The hash of `value`.
    pub fn of(&self, value: impl Hash + Copy) -> u128 {
        (u128::from(self.0.hash_one(value)) << 64) | u128::from(self.1.hash_one(value))
    }
}

/// The requests that ran without error against one schema build.
#[derive(Default)]
pub struct Validated {
    keys: Mutex<HashSet<u128>>,
    hasher: KeyedHash,
}

/// One request as [`Validated`] knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestKey(u128);

impl Validated {
    /// The key of a request: its query text, variables as sent (JSON text) and operation name.
    pub fn key(&self, text: &str, variables: Option<&str>, operation: Option<&str>) -> RequestKey {
        RequestKey(self.hasher.of((text, variables, operation)))
    }

    /// Whether the request of `key` ran without error against this build.
    pub fn contains(&self, key: RequestKey) -> bool {
        self.keys.lock().is_ok_and(|k| k.contains(&key.0))
    }

    /// Remembers that the request of `key` ran without error against this build.
    pub fn insert(&self, key: RequestKey) {
        if let Ok(mut k) = self.keys.lock() {
            if k.len() >= MAX_VALIDATED {
                k.clear();
            }
            k.insert(key.0);
        }
    }
}

/// The response body of a validated request whose root fields are all fast-path reads, or
/// `None` to run it through the executor (module docs).
pub async fn respond(roots: &FastRoots, model: &Model, backend: &Backend, req: &RequestData, streams: &ListStreams) -> Option<String> {
    let doc = req.document.as_deref()?;
    let operation = operation(doc, req.operation_name.as_deref())?;
    if operation.ty != OperationType::Query {
        return None;
    }
    let walker = Walker::of_document(model, doc, operation, &req.variables);
    let groups = root_groups(&walker, &operation.selection_set.node);
    let mut reads = Vec::with_capacity(groups.len());
    for (_, fields) in &groups {
        let [field] = fields.as_slice() else { return None };
        let (collection, op) = roots.get(field.name.node.as_str())?;
        let planned = plan(&walker, field, collection, op)?;
        if op == Op::List && streams.wanted(&planned.query) {
            return None;
        }
        let walker = &walker;
        reads.push(async move { written(backend, &req.caller, walker, field, planned).await.ok_or(()) });
    }
    if reads.is_empty() {
        return None;
    }
    // The first failure gives up the others (the executor then reads them again).
    let texts = futures_util::future::try_join_all(reads).await.ok()?;
    let mut out = String::with_capacity(texts.iter().map(|t| t.len() + 32).sum::<usize>() + 16);
    out.push_str(r#"{"data":{"#);
    for (i, ((key, _), text)) in groups.iter().zip(texts).enumerate() {
        if i > 0 {
            out.push(',');
        }
        // A response key is a GraphQL name ([_A-Za-z][_0-9A-Za-z]*): no escaping needed.
        out.push('"');
        out.push_str(key);
        out.push_str("\":");
        out.push_str(&text);
    }
    out.push_str("}}");
    Some(out)
}
