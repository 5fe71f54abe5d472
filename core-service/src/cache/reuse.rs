//! What an edge needs to keep a read's answer in memory ([`cdapi_proto::edge_feed`];
//! docs/scaling.md "The edge cache"): the collections whose writes make it stale, and when the
//! caller's token stops being valid.
//!
//! Only answers the result cache could keep are marked (its lookup neither bypassed nor read
//! on a replica: [`crate::grpc`]'s items reads), so the same rules hold: every collection read
//! is announced, nothing volatile such as `$NOW`. The edge keys the answer by the request's
//! token, client address and URL, so nothing is shared between callers; what decides the
//! caller's access beyond its token is followed here: a user's record (status, role, static
//! token: `directus_users` is a dependency of every signed-in caller's answer) and the
//! policies and permissions (a change of them drops every answer, as it drops the result
//! cache). Session tokens and share sessions are never marked: a logout ends a session
//! without a database write, and a share ends by time.

use cdapi_proto::edge_feed::{REUSE_METADATA, REUSE_UNTIL_METADATA};

/// The marks of one answer an edge may keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reuse {
    /// The collections whose writes make the answer stale.
    pub reads: Vec<String>,
    /// When the caller's token expires (Unix seconds).
    pub until: Option<u64>,
}

impl Reuse {
    /// The marks of an answer of a statement that read `reads`, for a caller who is signed in
    /// (`signed_in`) with a token that expires at `until` (Unix seconds). Only for callers
    /// whose answers may be kept at all (`crate::auth::Caller::edge_reuse`).
    pub fn new(reads: &[String], signed_in: bool, until: Option<u64>) -> Self {
        let mut reads = reads.to_vec();
        if signed_in && !reads.iter().any(|c| c == crate::write::users::USERS) {
            reads.push(crate::write::users::USERS.to_owned());
        }
        Self { reads, until }
    }

    /// Writes the marks into a response's metadata; nothing when a collection's name cannot
    /// travel in a header (the answer is then not kept).
    pub fn stamp(&self, md: &mut tonic::metadata::MetadataMap) {
        let reads = serde_json::Value::from(self.reads.clone()).to_string();
        let Ok(value) = reads.parse() else { return };
        md.insert(REUSE_METADATA, value);
        if let Some(until) = self.until
            && let Ok(value) = until.to_string().parse()
        {
            md.insert(REUSE_UNTIL_METADATA, value);
        }
    }
}
