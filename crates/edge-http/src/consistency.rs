//! Read-your-writes over read replicas at the edges (docs/operations.md "Read replicas"):
//! the consistency token a write answers with travels to the client and back.
//!
//! [`scope`] runs one HTTP request's handling with a token slot, filled from the request's
//! `X-Consistency-Token` header, else its [`COOKIE`] cookie. Every gRPC call made while handling
//! it ([`crate::balance::Balanced`]) sends the slot's token as `x-consistency-token` metadata,
//! and a write's answer puts its token in the slot, so a later call of the same request (a
//! GraphQL query after a mutation) reads what the write wrote. When a call issued a token, the
//! HTTP response carries it as the `X-Consistency-Token` header and the [`COOKIE`] cookie, so a
//! browser sends it back without doing anything and other clients copy the header.
//!
//! Work a request hands to a task of its own (a background export, a GraphQL reply's later
//! lists) takes the slot along with [`carry`]. WebSocket messages (realtime, GraphQL
//! subscriptions) are handled outside any request: their reads carry no token and their writes
//! answer none.
//!
//! The cookie takes the session cookie's attributes (SESSION_COOKIE_SECURE,
//! SESSION_COOKIE_SAME_SITE, SESSION_COOKIE_DOMAIN). A cookie that is not a WAL position is
//! ignored (it may come from another site of the same domain); a header that is not one is the
//! client's mistake, answered `400 INVALID_QUERY` by the core. Two writes answered at once may
//! set the cookie in either order: a client that must read both sends the newer token itself.

use std::future::Future;
use std::sync::{Arc, Mutex};

/// The HTTP header of a consistency token (the gRPC metadata key, spelt as a header).
pub const HEADER: &str = cdapi_proto::CONSISTENCY_METADATA;

/// The cookie carrying the newest token a browser has been given.
pub const COOKIE: &str = "cdapi_consistency";

/// How long the cookie lives (seconds): far beyond any lag a replica may have before it is
/// skipped (DB_REPLICA_MAX_LAG_MS).
pub const COOKIE_MAX_AGE_SECS: i64 = 300;

/// One request's token slot: the newest token (the request's, replaced by each write's
/// answer), and whether a call of this request answered one (so the response carries it).
#[derive(Debug, Default)]
pub struct Slot(Mutex<(Option<http::HeaderValue>, bool)>);

impl Slot {
    /// The token to send with a call.
    pub fn token(&self) -> Option<http::HeaderValue> {
        self.0.lock().ok().and_then(|s| s.0.clone())
    }

    /// Keeps the token a call answered, unless the slot holds a newer one.
    pub fn issued(&self, token: http::HeaderValue) {
        if let Ok(mut s) = self.0.lock() {
            let newer = match (s.0.as_ref().and_then(position), position(&token)) {
                (Some(held), Some(new)) => new >= held,
                _ => true,
            };
            if newer {
                s.0 = Some(token);
            }
            s.1 = true;
        }
    }

    fn answered(&self) -> Option<http::HeaderValue> {
        self.0.lock().ok().and_then(|s| if s.1 { s.0.clone() } else { None })
    }
}

/// A token's WAL position (`<hex>/<hex>`, each at most 8 digits), to compare two tokens.
fn position(token: &http::HeaderValue) -> Option<u64> {
    let (high, low) = token.to_str().ok()?.split_once('/')?;
    let group = |g: &str| ((1..=8).contains(&g.len()) && g.bytes().all(|b| b.is_ascii_hexdigit())).then(|| u64::from_str_radix(g, 16).ok()).flatten();
    Some((group(high)? << 32) | group(low)?)
}

tokio::task_local! {
    static SLOT: Arc<Slot>;
}

/// The slot of the request being handled on this task, if any.
pub fn current() -> Option<Arc<Slot>> {
    SLOT.try_with(Arc::clone).ok()
}

/// The token a request sends: its `X-Consistency-Token` header, else its [`COOKIE`] cookie
/// when that is a WAL position.
pub fn from_request(headers: &http::HeaderMap) -> Option<http::HeaderValue> {
    headers
        .get(HEADER)
        .cloned()
        .or_else(|| crate::cookies::get(headers, COOKIE).and_then(|c| http::HeaderValue::from_str(&c).ok()).filter(|v| position(v).is_some()))
}

/// `work` with the current request's slot (see the module docs): for a task the request spawns.
pub fn carry<F: Future>(work: F) -> impl Future<Output = F::Output> {
    let slot = current();
    async move {
        match slot {
            Some(slot) => SLOT.scope(slot, work).await,
            None => work.await,
        }
    }
}

/// The session cookie's attributes (read once; defaults when unreadable, as the edges refuse
/// to start with unreadable cookie settings anyway).
fn cookie_settings() -> &'static Option<crate::cookies::CookieSettings> {
    static SETTINGS: std::sync::OnceLock<Option<crate::cookies::CookieSettings>> = std::sync::OnceLock::new();
    SETTINGS.get_or_init(|| crate::cookies::CookieSettings::from_env().ok())
}

/// Handles a request (`handle`) with a token slot holding `token` (the request's:
/// [`from_request`]); the response gets the header and the cookie when a call issued a token
/// (see the module docs).
pub async fn scope<F>(token: Option<http::HeaderValue>, handle: F) -> warp::reply::Response
where
    F: Future<Output = warp::reply::Response>,
{
    let slot = Arc::new(Slot(Mutex::new((token, false))));
    let mut res = SLOT.scope(slot.clone(), handle).await;
    if let Some(token) = slot.answered() {
        let value = token.to_str().unwrap_or_default();
        let max_age = cookie::time::Duration::seconds(COOKIE_MAX_AGE_SECS);
        let cookie = match cookie_settings() {
            Some(settings) => settings.build_named(crate::cookies::Kind::Session, COOKIE, value, max_age),
            None => cookie::Cookie::build((COOKIE, value.to_owned()))
                .http_only(true)
                .path("/")
                .same_site(cookie::SameSite::Lax)
                .max_age(max_age)
                .build()
                .to_string(),
        };
        if let Ok(cookie) = http::HeaderValue::from_str(&cookie) {
            res.headers_mut().append(http::header::SET_COOKIE, cookie);
        }
        res.headers_mut().insert(HEADER, token);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_keeps_the_newest_token() {
        let slot = Slot(Mutex::new((Some(http::HeaderValue::from_static("1/0")), false)));
        slot.issued(http::HeaderValue::from_static("0/FFFFFFFF"));
        assert_eq!(slot.answered(), Some(http::HeaderValue::from_static("1/0")));
        slot.issued(http::HeaderValue::from_static("1/10"));
        assert_eq!(slot.answered(), Some(http::HeaderValue::from_static("1/10")));
    }

    #[test]
    fn a_cookie_that_is_no_position_is_ignored() {
        let mut h = http::HeaderMap::new();
        h.insert(http::header::COOKIE, http::HeaderValue::from_static("cdapi_consistency=garbage"));
        assert_eq!(from_request(&h), None);
    }

    #[test]
    fn the_header_wins_over_the_cookie() {
        let mut h = http::HeaderMap::new();
        h.insert(http::header::COOKIE, http::HeaderValue::from_static("a=1; cdapi_consistency=0/20"));
        assert_eq!(from_request(&h), Some(http::HeaderValue::from_static("0/20")));
        h.insert(HEADER, http::HeaderValue::from_static("0/30"));
        assert_eq!(from_request(&h), Some(http::HeaderValue::from_static("0/30")));
        assert_eq!(from_request(&http::HeaderMap::new()), None);
    }

    #[tokio::test]
    async fn a_token_issued_while_handling_reaches_the_response() {
        let mut h = http::HeaderMap::new();
        h.insert(HEADER, http::HeaderValue::from_static("0/10"));
        // Nothing issued: the request's own token is not echoed.
        let res = scope(from_request(&h), async { warp::reply::Response::new("".into()) }).await;
        assert!(res.headers().get(HEADER).is_none() && res.headers().get(http::header::SET_COOKIE).is_none());
        let res = scope(from_request(&h), async {
            let slot = current();
            assert_eq!(slot.as_ref().and_then(|s| s.token()), Some(http::HeaderValue::from_static("0/10")));
            if let Some(s) = slot {
                s.issued(http::HeaderValue::from_static("0/40"));
            }
            assert_eq!(current().and_then(|s| s.token()), Some(http::HeaderValue::from_static("0/40")));
            warp::reply::Response::new("".into())
        })
        .await;
        assert_eq!(res.headers().get(HEADER), Some(&http::HeaderValue::from_static("0/40")));
        let cookie = res.headers().get(http::header::SET_COOKIE).and_then(|v| v.to_str().ok()).unwrap_or_default();
        assert!(cookie.starts_with("cdapi_consistency=0/40;") && cookie.contains("HttpOnly"), "{cookie}");
        // Outside a request there is no slot.
        assert!(current().is_none());
    }
}
