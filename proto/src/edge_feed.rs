//! The edge cache's feed (docs/scaling.md "The edge cache"): what core-service tells the HTTP
//! edges that keep item-read answers in their own memory, and how the edges answer. Redis
//! pub/sub and one sorted set, under the deployment's key prefix (`REDIS_KEY_PREFIX`):
//!
//! - channel [`channel`]: core-service's [`Message`]s, in the order each core replica's
//!   listener handles the database's announcements, and each edge's own lease pings;
//! - sorted set [`registry`]: the edges that may answer from memory, member
//!   `<edge>:<lease ms>`, score the end of the registration in Redis's clock (milliseconds);
//! - channel [`ack_channel`] of a core replica: `<edge>\n<fence>`, an edge having handled
//!   everything published before that replica's fence.
//!
//! A read asked for by an edge ([`ASK_METADATA`]) whose answer it may keep carries the gRPC metadata [`REUSE_METADATA`] (the
//! collections it depends on, a JSON array) and, for a token that expires,
//! [`REUSE_UNTIL_METADATA`] (Unix seconds).

/// Request metadata with which an edge asks for [`REUSE_METADATA`] (any value). Services keep it
/// only from callers presenting the internal credential (the edges); from anyone else it is
/// removed, so no other client learns which collections a read depended on.
pub const ASK_METADATA: &str = "x-cdapi-edge-cache";

/// Response metadata of a read an edge may keep: a JSON array of the collections whose writes
/// make the answer stale.
pub const REUSE_METADATA: &str = "x-cdapi-edge-reuse";

/// Response metadata: when the caller's token expires (Unix seconds); the answer is not reused
/// past it.
pub const REUSE_UNTIL_METADATA: &str = "x-cdapi-edge-reuse-until";

/// The feed's channel.
pub fn channel(prefix: &str) -> String {
    format!("{prefix}cache:edge")
}

/// The registry of edges that answer from memory.
pub fn registry(prefix: &str) -> String {
    format!("{prefix}cache:edges")
}

/// The channel on which core replica `replica` receives fence acknowledgements.
pub fn ack_channel(prefix: &str, replica: &str) -> String {
    format!("{prefix}cache:ack:{replica}")
}

/// One message of the feed's channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// Writes of these collections were announced: answers that depend on them are stale.
    Written(Vec<String>),
    /// Drop every answer (a schema or permission change, or a feed that may have missed
    /// announcements).
    Reset,
    /// A core replica's listener follows the database's announcements.
    Heartbeat,
    /// A write of core replica `replica` waits: answer [`ack_channel`] with `<edge>\n<n>` once
    /// everything before this message is handled.
    Fence {
        /// The waiting core replica's name.
        replica: String,
        /// The fence's number at that replica.
        n: u64,
    },
    /// An edge's own lease ping (`edge`, its cycle `n`): when the edge reads it back, every
    /// message published before it has been handled.
    Ping {
        /// The edge's name.
        edge: String,
        /// The lease cycle's number at that edge.
        n: u64,
    },
}

impl Message {
    /// The message as published.
    pub fn encode(&self) -> String {
        match self {
            Self::Written(collections) => format!("b{}", serde_json::Value::from(collections.clone())),
            Self::Reset => "r".into(),
            Self::Heartbeat => "h".into(),
            Self::Fence { replica, n } => format!("f{replica}\n{n}"),
            Self::Ping { edge, n } => format!("p{edge}\n{n}"),
        }
    }

    /// A published message; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let mut chars = text.chars();
        let kind = chars.next()?;
        let rest = chars.as_str();
        let pair = || {
            let (name, n) = rest.split_once('\n')?;
            Some((name.to_owned(), n.parse::<u64>().ok()?))
        };
        match kind {
            'b' => serde_json::from_str(rest).ok().map(Self::Written),
            'r' if rest.is_empty() => Some(Self::Reset),
            'h' if rest.is_empty() => Some(Self::Heartbeat),
            'f' => pair().map(|(replica, n)| Self::Fence { replica, n }),
            'p' => pair().map(|(edge, n)| Self::Ping { edge, n }),
            _ => None,
        }
    }
}

/// An acknowledgement on [`ack_channel`]: (edge, fence number).
pub fn parse_ack(text: &str) -> Option<(&str, u64)> {
    let (edge, n) = text.split_once('\n')?;
    Some((edge, n.parse().ok()?))
}

/// A registration's member: `<edge>:<lease ms>`; [`parse_member`] reads it back.
pub fn member(edge: &str, lease_ms: u64) -> String {
    format!("{edge}:{lease_ms}")
}

/// (edge, lease in milliseconds) of a registry member.
pub fn parse_member(member: &str) -> Option<(&str, u64)> {
    let (edge, lease) = member.rsplit_once(':')?;
    Some((edge, lease.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_survive_encoding() {
        for m in [
            Message::Written(vec!["articles".into(), "a\nb".into(), "x\"y".into()]),
            Message::Reset,
            Message::Heartbeat,
            Message::Fence { replica: "00ff".into(), n: 7 },
            Message::Ping { edge: "e1".into(), n: u64::MAX },
        ] {
            assert_eq!(Message::parse(&m.encode()), Some(m));
        }
        for bad in ["", "x", "b[1]", "rr", "f1", "f1\nx", "p\n-1"] {
            assert_eq!(Message::parse(bad), None, "{bad:?}");
        }
        assert_eq!(parse_ack("e1\n3"), Some(("e1", 3)));
        assert_eq!(parse_member(&member("a:b", 1000)), Some(("a:b", 1000)));
    }
}
