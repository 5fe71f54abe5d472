//! W3C Trace Context (`traceparent: 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`),
//! as the edges propagate it to the services: an incoming trace id is kept, a request without
//! one gets a trace id of its own; each hop gets a new parent id.

use std::hash::{BuildHasher, Hasher};

/// One parsed `traceparent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    /// 16 bytes, never all zero.
    pub trace_id: u128,
    /// 8 bytes, never zero.
    pub parent_id: u64,
    /// Trace flags (bit 0: sampled).
    pub flags: u8,
}

impl TraceParent {
    /// Parses a version-00 header; `None` for anything malformed (the spec says: start anew).
    pub fn parse(header: &str) -> Option<Self> {
        let parts: Vec<&str> = header.trim().split('-').collect();
        let [version, trace, parent, flags] = parts.as_slice() else { return None };
        let hex = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if *version != "00" || !hex(trace, 32) || !hex(parent, 16) || !hex(flags, 2) {
            return None;
        }
        let trace_id = u128::from_str_radix(trace, 16).ok()?;
        let parent_id = u64::from_str_radix(parent, 16).ok()?;
        let flags = u8::from_str_radix(flags, 16).ok()?;
        (trace_id != 0 && parent_id != 0).then_some(Self { trace_id, parent_id, flags })
    }

    /// The header for the next hop of request `request_id`: the incoming trace continued
    /// under a new parent id, or a new sampled trace whose id is derived from the request id
    /// (so every call made for one request carries the same trace id).
    pub fn next_hop(incoming: Option<&str>, request_id: &str) -> Self {
        match incoming.and_then(Self::parse) {
            Some(t) => Self { parent_id: random_u64().max(1), ..t },
            None => Self {
                trace_id: ((u128::from(keyed_hash(request_id, 0)) << 64) | u128::from(keyed_hash(request_id, 1))).max(1),
                parent_id: random_u64().max(1),
                flags: 1,
            },
        }
    }

    /// The trace id as 32 lowercase hex digits (what logs carry as `trace_id`).
    pub fn trace_id_hex(&self) -> String {
        format!("{:032x}", self.trace_id)
    }
}

impl std::fmt::Display for TraceParent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "00-{:032x}-{:016x}-{:02x}", self.trace_id, self.parent_id, self.flags)
    }
}

/// A random 64-bit value from the standard library's per-process random hasher keys (ids for
/// tracing, not secrets).
fn random_u64() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.finish()
}

/// A hash of `text` under a key chosen at random once per process.
fn keyed_hash(text: &str, salt: u8) -> u64 {
    static KEYS: std::sync::OnceLock<std::collections::hash_map::RandomState> = std::sync::OnceLock::new();
    let mut h = KEYS.get_or_init(std::collections::hash_map::RandomState::new).build_hasher();
    h.write_u8(salt);
    h.write(text.as_bytes());
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_incoming_trace_is_continued_under_a_new_parent() {
        let incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let next = TraceParent::next_hop(Some(incoming), "r1");
        assert_eq!(next.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_ne!(next.parent_id, 0x00f0_67aa_0ba9_02b7);
        assert_eq!(TraceParent::parse(&next.to_string()), Some(next));
    }

    #[test]
    fn malformed_headers_start_a_new_trace() {
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
        let a = TraceParent::next_hop(None, "r1");
        let b = TraceParent::next_hop(None, "r2");
        assert_ne!(a.trace_id, b.trace_id);
        assert_eq!(TraceParent::next_hop(Some("junk"), "r1").trace_id, a.trace_id);
    }
}
