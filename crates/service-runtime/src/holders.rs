//! Places counted per holder: the per-caller budgets (docs/security.md "Budgets") of long
//! streams (STREAMS_PER_CALLER), realtime subscriptions (REALTIME_MAX_SUBSCRIPTIONS_PER_USER)
//! and WebSocket connections (WEBSOCKETS_CONN_LIMIT_PER_USER) count with it. A holder is a
//! string the caller names (a user id, `ip:<address>` for the public); a holder's entry
//! exists only while it holds a place, so memory follows the places held, not the holders seen.
//!
//! The public is counted per client address, and every per-address budget (these, the auth
//! attempt limits, RATE_LIMITER_*) counts an IPv6 client by its /64 network
//! ([`address_holder`]): one subscriber usually gets a whole /64 or more, so counting each of
//! its 2^64 addresses apart would give them no limit at all.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The address a per-address budget counts `ip` under: an IPv4 address as it is (also written
/// as IPv4-mapped IPv6), an IPv6 address as its /64 network (`2001:db8:1:2::`).
pub fn address_holder(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & (u128::MAX << 64))),
        v4 => v4,
    }
}

/// How many places each holder has, each at most `max`.
#[derive(Debug)]
pub struct PerHolder {
    counts: Mutex<HashMap<String, usize>>,
    max: usize,
}

/// One place of a holder in a [`PerHolder`]; given back when dropped.
#[derive(Debug)]
pub struct Held {
    of: Arc<PerHolder>,
    holder: String,
}

impl PerHolder {
    /// At most `max` places per holder.
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(Self { counts: Mutex::default(), max })
    }

    /// The counts. A panic while they were held leaves them consistent (each change is one
    /// statement), so a poisoned lock is taken as it is.
    fn counts(&self) -> MutexGuard<'_, HashMap<String, usize>> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes a place for `holder`; `None` when it holds `max` already.
    pub fn take(self: &Arc<Self>, holder: &str) -> Option<Held> {
        let mut counts = self.counts();
        let n = counts.get(holder).copied().unwrap_or(0);
        if n >= self.max {
            return None;
        }
        counts.insert(holder.to_owned(), n + 1);
        Some(Held { of: self.clone(), holder: holder.to_owned() })
    }

    /// How many places `holder` has now.
    pub fn held_by(&self, holder: &str) -> usize {
        self.counts().get(holder).copied().unwrap_or(0)
    }
}

impl Held {
    /// Whose place this is.
    pub fn holder(&self) -> &str {
        &self.holder
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut counts = self.of.counts();
        if let Some(n) = counts.get_mut(&self.holder) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.remove(&self.holder);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_bounded_per_holder_and_given_back() {
        let places = PerHolder::new(2);
        let a1 = places.take("a");
        let a2 = places.take("a");
        assert!(a1.is_some() && a2.is_some());
        assert!(places.take("a").is_none(), "a third place of one holder");
        let b = places.take("b");
        assert_eq!(b.as_ref().map(Held::holder), Some("b"), "another holder");
        drop(a1);
        assert_eq!(places.held_by("a"), 1);
        assert!(places.take("a").is_some(), "a place given back is free again");
        drop((a2, b));
        assert!(places.counts().is_empty(), "no entry outlives its places");
    }

    #[test]
    fn an_ipv6_client_is_counted_by_its_64_network() {
        let holder = |s: &str| s.parse::<IpAddr>().map(address_holder).map(|ip| ip.to_string()).unwrap_or_default();
        assert_eq!(holder("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), "2001:db8:1:2::");
        assert_eq!(holder("2001:db8:1:2::1"), holder("2001:db8:1:2:ffff::9"));
        assert_ne!(holder("2001:db8:1:2::1"), holder("2001:db8:1:3::1"));
        assert_eq!(holder("203.0.113.7"), "203.0.113.7");
        assert_eq!(holder("::ffff:203.0.113.7"), "203.0.113.7");
    }
}
