//! The auth cookies (docs/authentication.md; Directus docs "Authentication"): `directus_refresh_token` (mode cookie) and
//! `directus_session_token` (mode session), httpOnly, `Path=/`, SameSite and Secure as
//! configured, Max-Age = the token's lifetime. Built and parsed with the `cookie` crate.

use cdapi_proto::ApiError;
use cdapi_proto::v1::{RefreshRequest, SessionMode};
use cookie::{Cookie, SameSite};
use http::HeaderMap;
use service_runtime::{env_opt, env_or};

/// The cookie of a short-lived SSO login (`state`), bound to the browser that began it.
pub const SSO_STATE_COOKIE: &str = "cdapi_sso_state";

/// Names and attributes of the auth cookies.
#[derive(Debug, Clone)]
pub struct CookieSettings {
    /// REFRESH_TOKEN_COOKIE_NAME (default `directus_refresh_token`).
    pub refresh_name: String,
    /// SESSION_COOKIE_NAME (default `directus_session_token`).
    pub session_name: String,
    /// REFRESH_TOKEN_COOKIE_SECURE / SESSION_COOKIE_SECURE (default false): `Secure`.
    pub secure: (bool, bool),
    /// REFRESH_TOKEN_COOKIE_SAME_SITE / SESSION_COOKIE_SAME_SITE (default `lax`).
    pub same_site: (SameSite, SameSite),
    /// REFRESH_TOKEN_COOKIE_DOMAIN / SESSION_COOKIE_DOMAIN (default none).
    pub domain: (Option<String>, Option<String>),
}

fn same_site(name: &str) -> anyhow::Result<SameSite> {
    match env_or(name, "lax".to_string())?.to_ascii_lowercase().as_str() {
        "lax" => Ok(SameSite::Lax),
        "strict" => Ok(SameSite::Strict),
        "none" => Ok(SameSite::None),
        other => anyhow::bail!("{name}={other:?}: use lax, strict or none"),
    }
}

/// Which auth cookie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The refresh token (mode cookie).
    Refresh,
    /// The session token (mode session).
    Session,
}

impl CookieSettings {
    /// Reads the settings. Errors: a variable that does not parse.
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(Self {
            refresh_name: env_or("REFRESH_TOKEN_COOKIE_NAME", "directus_refresh_token".to_string())?,
            session_name: env_or("SESSION_COOKIE_NAME", "directus_session_token".to_string())?,
            secure: (env_or("REFRESH_TOKEN_COOKIE_SECURE", false)?, env_or("SESSION_COOKIE_SECURE", false)?),
            same_site: (same_site("REFRESH_TOKEN_COOKIE_SAME_SITE")?, same_site("SESSION_COOKIE_SAME_SITE")?),
            domain: (env_opt("REFRESH_TOKEN_COOKIE_DOMAIN"), env_opt("SESSION_COOKIE_DOMAIN")),
        })
    }

    /// The cookie's name.
    pub fn name(&self, kind: Kind) -> &str {
        match kind {
            Kind::Refresh => &self.refresh_name,
            Kind::Session => &self.session_name,
        }
    }

    /// `Set-Cookie` value carrying `value` for `max_age_ms` milliseconds.
    pub fn set(&self, kind: Kind, value: &str, max_age_ms: i64) -> String {
        self.build(kind, value, cookie::time::Duration::milliseconds(max_age_ms))
    }

    /// `Set-Cookie` value removing the cookie.
    pub fn clear(&self, kind: Kind) -> String {
        self.build(kind, "", cookie::time::Duration::ZERO)
    }

    fn build(&self, kind: Kind, value: &str, max_age: cookie::time::Duration) -> String {
        self.build_named(kind, self.name(kind), value, max_age)
    }

    /// `Set-Cookie` value of a cookie `name` with the attributes of the `kind` cookie
    /// (httpOnly, `Path=/`, SameSite, Secure and Domain as configured).
    pub fn build_named(&self, kind: Kind, name: &str, value: &str, max_age: cookie::time::Duration) -> String {
        let (secure, same_site, domain) = match kind {
            Kind::Refresh => (self.secure.0, self.same_site.0, &self.domain.0),
            Kind::Session => (self.secure.1, self.same_site.1, &self.domain.1),
        };
        let mut c = Cookie::build((name.to_owned(), value.to_owned()))
            .http_only(true)
            .path("/")
            .same_site(same_site)
            .secure(secure || same_site == SameSite::None)
            .max_age(max_age);
        if let Some(d) = domain {
            c = c.domain(d.clone());
        }
        c.build().to_string()
    }
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn get(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == name && !c.value().is_empty())
        .map(|c| c.value().to_owned())
}

/// `Set-Cookie` value of the SSO state cookie (10 minutes, only sent back to `/auth/login`).
pub fn sso_state(value: &str, secure: bool) -> String {
    sso_state_cookie(value, secure, cookie::time::Duration::minutes(10))
}

/// `Set-Cookie` value removing the SSO state cookie.
pub fn clear_sso_state() -> String {
    sso_state_cookie("", false, cookie::time::Duration::ZERO)
}

fn sso_state_cookie(value: &str, secure: bool, max_age: cookie::time::Duration) -> String {
    Cookie::build((SSO_STATE_COOKIE, value.to_owned()))
        .http_only(true)
        .path("/auth/login")
        .same_site(SameSite::Lax)
        .secure(secure)
        .max_age(max_age)
        .build()
        .to_string()
}

/// `mode` (Directus docs "Authentication"): `json`, `cookie` or `session`; `None` when empty.
/// Errors: INVALID_PAYLOAD for another word.
pub fn session_mode(value: &str) -> Result<Option<SessionMode>, ApiError> {
    match value {
        "" => Ok(None),
        "json" => Ok(Some(SessionMode::Json)),
        "cookie" => Ok(Some(SessionMode::Cookie)),
        "session" => Ok(Some(SessionMode::Session)),
        other => Err(ApiError::invalid_payload(format!("\"mode\" must be json, cookie or session, not \"{other}\""))),
    }
}

/// The refresh call for a token given in the request (`body_token`, empty when none) or held in
/// the auth cookies. Directus's rule: a token in the body means mode json; otherwise the cookie
/// at hand decides (refresh cookie: cookie, session cookie: session); `mode` overrides.
pub fn refresh_request(body_token: String, mode: Option<SessionMode>, refresh_cookie: Option<String>, session_cookie: Option<String>) -> RefreshRequest {
    let mode = mode.unwrap_or(match (&body_token, &refresh_cookie, &session_cookie) {
        (t, _, _) if !t.is_empty() => SessionMode::Json,
        (_, Some(_), _) => SessionMode::Cookie,
        (_, None, Some(_)) => SessionMode::Session,
        _ => SessionMode::Json,
    });
    let (refresh_token, session_token) = if !body_token.is_empty() {
        (body_token, String::new())
    } else if mode == SessionMode::Session && session_cookie.is_some() {
        (String::new(), session_cookie.unwrap_or_default())
    } else {
        (refresh_cookie.unwrap_or_default(), session_cookie.unwrap_or_default())
    };
    RefreshRequest { refresh_token, session_token, mode: mode as i32 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> CookieSettings {
        CookieSettings {
            refresh_name: "directus_refresh_token".into(),
            session_name: "directus_session_token".into(),
            secure: (false, true),
            same_site: (SameSite::Lax, SameSite::Lax),
            domain: (None, Some("example.com".into())),
        }
    }

    #[test]
    fn cookies_carry_directus_attributes() {
        let s = settings();
        let c = s.set(Kind::Refresh, "abc", 604_800_000);
        assert!(c.starts_with("directus_refresh_token=abc"), "{c}");
        for part in ["HttpOnly", "Path=/", "SameSite=Lax", "Max-Age=604800"] {
            assert!(c.contains(part), "{c} lacks {part}");
        }
        assert!(!c.contains("Secure"));
        let c = s.set(Kind::Session, "jwt", 86_400_000);
        assert!(c.contains("Secure") && c.contains("Domain=example.com"), "{c}");
        assert!(s.clear(Kind::Refresh).contains("Max-Age=0"));
    }

    #[test]
    fn reads_a_cookie_among_others() {
        let mut h = HeaderMap::new();
        h.insert(http::header::COOKIE, http::HeaderValue::from_static("a=1; directus_session_token=tok; b=2"));
        assert_eq!(get(&h, "directus_session_token").as_deref(), Some("tok"));
        assert_eq!(get(&h, "c"), None);
    }
}
