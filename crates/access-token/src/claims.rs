//! The claims of the JWTs auth-service signs. Access and session tokens use Directus's claim
//! names (`id`, `role`, `app_access`, `admin_access`, `session`), so a client that decodes its
//! token finds what it would find in a Directus token.

use serde::{Deserialize, Serialize};

/// `iss` of access and session tokens. Tokens with another issuer (password-reset tokens) are
/// never accepted as access tokens.
pub const ACCESS_ISSUER: &str = "cdapi";

/// `iss` of password-reset tokens.
pub const RESET_ISSUER: &str = "cdapi-password-reset";

/// Claims of an access token (mode json/cookie) or a session token (mode session).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The user's id (UUID text); empty (and left out, as Directus leaves it out) in a share
    /// session's tokens.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// The user's role id, if any, when the token was signed.
    pub role: Option<String>,
    /// Whether the user could use the admin app when the token was signed.
    pub app_access: bool,
    /// Whether the user had admin access when the token was signed. Verifiers read the user's
    /// current state instead where they can (core-service does).
    pub admin_access: bool,
    /// Session tokens only: the session id (SHA-256 hex of the session's refresh token, the key
    /// of its Redis record). A session token is valid only while that session is alive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The refresh-session family (login) this token was issued from, in every mode (json,
    /// cookie, session): a self-service password or email change ends the user's other
    /// families and keeps this one (`sessions::Redis::end_user_sessions`). Absent in tokens
    /// signed before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// A share session's tokens only: the share's id (Directus's `share` claim; docs/shares.md).
    /// Such a token names no user: it reads what the share reaches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<String>,
    /// Issued at (seconds since the epoch).
    pub iat: u64,
    /// Expires at (seconds since the epoch).
    pub exp: u64,
    /// [`ACCESS_ISSUER`].
    pub iss: String,
}
