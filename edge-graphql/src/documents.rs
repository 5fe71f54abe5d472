//! Parsed documents kept by query text, so a query sent again (the usual case: clients send the
//! same few texts) is not parsed again. A document is kept once it has run without error, so a
//! hit needs neither parsing nor the caps ([`crate::budget`]), and a client cannot fill the
//! cache with documents that do not run.
//!
//! Bounds: texts of at most [`MAX_TEXT_BYTES`] are kept, [`MAX_DOCUMENTS`] of them at most
//! (then the cache starts afresh). A parsed document takes up to ~45 bytes per byte of text
//! (a text of list values), so the cache holds about 25 MiB at worst and far less in practice.
//! Keys are 128-bit keyed hashes of the text ([`crate::direct::KeyedHash`]).

use crate::direct::KeyedHash;
use async_graphql::parser::types::ExecutableDocument;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Longest query text kept (bytes).
pub const MAX_TEXT_BYTES: usize = 2048;
/// Most documents kept.
pub const MAX_DOCUMENTS: usize = 256;

/// The documents of one process.
#[derive(Default)]
pub struct Documents {
    parsed: Mutex<HashMap<u128, Arc<ExecutableDocument>>>,
    hasher: KeyedHash,
}

/// A query text as [`Documents`] knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocumentKey(u128);

impl Documents {
    /// The key of `text`; `None` when the text is too long to be kept.
    pub fn key(&self, text: &str) -> Option<DocumentKey> {
        (text.len() <= MAX_TEXT_BYTES).then(|| DocumentKey(self.hasher.of(text)))
    }

    /// The document kept under `key`, if any.
    pub fn get(&self, key: DocumentKey) -> Option<Arc<ExecutableDocument>> {
        self.parsed.lock().ok()?.get(&key.0).cloned()
    }

    /// Keeps `doc`, the parse of the text of `key` (which passed the caps and ran without
    /// error).
    pub fn insert(&self, key: DocumentKey, doc: Arc<ExecutableDocument>) {
        if let Ok(mut parsed) = self.parsed.lock() {
            if parsed.len() >= MAX_DOCUMENTS {
                parsed.clear();
            }
            parsed.insert(key.0, doc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Documents, MAX_TEXT_BYTES};
    use std::sync::Arc;

    #[test]
    fn a_kept_document_is_found_by_its_text_only() -> Result<(), String> {
        let documents = Documents::default();
        let doc = Arc::new(async_graphql::parser::parse_query("{ a }").map_err(|e| e.to_string())?);
        let key = documents.key("{ a }").ok_or("a short text has a key")?;
        documents.insert(key, doc.clone());
        let found = |text: &str| documents.key(text).and_then(|k| documents.get(k));
        assert!(found("{ a }").is_some_and(|d| Arc::ptr_eq(&d, &doc)));
        assert!(found("{ a  }").is_none());
        let long = format!("{{ a }}{}", " ".repeat(MAX_TEXT_BYTES));
        assert!(documents.key(&long).is_none(), "texts over the bound are not kept");
        Ok(())
    }
}
