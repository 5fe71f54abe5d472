//! Consistency tokens on the wire (docs/grpc-api.md "Consistency tokens"): a write's answer
//! carries the primary's WAL position after its commit as the response metadata
//! [`CONSISTENCY_METADATA`]; a read sends the newest token it holds as request metadata of the
//! same name, and is then served from a replica that replayed it, or from the primary.
//!
//! [`answer_hook`] stamps the answers: every successful call of an RPC that may write (see
//! [`issues_token`]) gets the position read once the handler returned, so after its commit.
//! Only with read replicas configured: without them every read sees every committed write.

use super::Replicas;
use super::lsn::Lsn;
use cdapi_proto::ApiError;
use std::sync::Arc;

/// The gRPC metadata key (and, at the edges, the HTTP header) of a consistency token.
pub const CONSISTENCY_METADATA: &str = cdapi_proto::CONSISTENCY_METADATA;

/// Whether the RPC at `path` may write, so its answer carries a token: every RPC but the
/// read-only ones ([`cdapi_proto::read_only_rpc`]), realtime subscriptions and schema diffs.
pub fn issues_token(path: &str) -> bool {
    let method = path.rsplit('/').next().unwrap_or("");
    !cdapi_proto::read_only_rpc(path) && !matches!(method, "Subscribe" | "DiffSnapshot")
}

/// The token a call carries, if any. Errors: INVALID_QUERY for a value that is not a WAL
/// position ([`Lsn::from_token`]).
pub fn from_metadata(md: &tonic::metadata::MetadataMap) -> Result<Option<Lsn>, ApiError> {
    match md.get(CONSISTENCY_METADATA) {
        None => Ok(None),
        // A value that is not ASCII is no position either.
        Some(v) => Lsn::from_token(v.to_str().unwrap_or_default()).map(Some),
    }
}

/// The hook of the server's [`service_runtime::grpc::RpcLayer`] acknowledging writes: a
/// successful call of an RPC that [`issues_token`] first waits for the result cache's fence
/// ([`crate::cache::ResultCache::fence`], with the cache on), then, with read replicas
/// configured, gets the primary's position read once the handler returned (so after its
/// commit) as [`CONSISTENCY_METADATA`]; when it cannot be read, the highest position
/// (`FFFFFFFF/FFFFFFFF`), which reads take to the primary at once.
pub fn answer_hook(replicas: Arc<Replicas>, cache: Arc<crate::cache::ResultCache>, pool: sqlx::PgPool) -> service_runtime::grpc::AnswerHook {
    Arc::new(move |path: &str| {
        if !(replicas.enabled() || cache.enabled()) || !issues_token(path) {
            return None;
        }
        let (replicas, cache, pool) = (replicas.clone(), cache.clone(), pool.clone());
        Some(Box::pin(async move {
            cache.fence(&pool).await;
            if !replicas.enabled() {
                return None;
            }
            let lsn = replicas.primary_position().await.unwrap_or_else(|e| {
                // Failing safe: the highest token sends the client's reads to the primary.
                tracing::warn!(error = %e, "reading the primary's WAL position failed: answering the highest consistency token");
                Lsn(u64::MAX)
            });
            http::HeaderValue::from_str(&lsn.to_string()).ok().map(|v| (http::HeaderName::from_static(CONSISTENCY_METADATA), v))
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_issue_tokens_reads_do_not() {
        for write in ["CreateItem", "UpdateItems", "DeleteItem", "SortItem", "ImportItems", "CreateCollection", "ApplyDiff", "PromoteVersion", "UploadFile"] {
            assert!(issues_token(&format!("/cdapi.v1.ItemsService/{write}")), "{write}");
        }
        for read in ["Read", "ReadStream", "ExportItems", "Subscribe", "GetSchema", "WatchSchema", "DiffSnapshot", "CompareVersion", "ListVersions"] {
            assert!(!issues_token(&format!("/cdapi.v1.ItemsService/{read}")), "{read}");
        }
    }

    #[test]
    fn tokens_in_metadata_are_checked() {
        let mut md = tonic::metadata::MetadataMap::new();
        assert_eq!(from_metadata(&md).ok(), Some(None));
        md.insert(CONSISTENCY_METADATA, tonic::metadata::MetadataValue::from_static("1/A"));
        assert_eq!(from_metadata(&md).ok(), Some(Some(Lsn(0x1_0000_000A))));
        md.insert(CONSISTENCY_METADATA, tonic::metadata::MetadataValue::from_static("latest"));
        assert_eq!(from_metadata(&md).err().map(|e| e.code), Some(cdapi_proto::ErrorCode::InvalidQuery));
    }
}
