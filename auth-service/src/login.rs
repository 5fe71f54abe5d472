//! Login, refresh and logout (docs/authentication.md; Directus docs "Authentication").

use crate::Auth;
use crate::sessions::Rotation;
use access_token::Claims;
use access_token::claims::ACCESS_ISSUER;
use access_token::client::Client;
use access_token::keys::VerifyError;
use cdapi_proto::v1::{LoginRequest, LogoutRequest, RefreshRequest, SessionMode, TokenReply};
use cdapi_proto::{ApiError, ErrorCode};
use std::net::IpAddr;
use std::time::Duration;
use system_tables::users::{self, Identity};

/// Whose tokens are issued: a signed-in user's, or a share session's (docs/shares.md).
#[derive(Clone, Copy)]
pub(crate) enum TokenHolder<'a> {
    /// A user.
    User(&'a Identity),
    /// A share session: the share's id.
    Share(&'a str),
}

impl TokenHolder<'_> {
    /// The `user` of the holder's refresh records: the user's id, or `share:<id>`.
    fn session_owner(self) -> String {
        match self {
            Self::User(user) => user.id.clone(),
            Self::Share(share) => crate::sessions::share_owner(share),
        }
    }
}

/// Whether the user's and the role's allow-lists admit `ip` (no address: nothing to check).
pub fn ip_allowed(user: &Identity, ip: Option<IpAddr>) -> bool {
    ip.is_none_or(|ip| access_token::ip::admits(user, ip))
}

impl Auth {
    /// `Login`: email + password (+ otp). Order of checks: input lengths (before any work;
    /// they depend on nothing stored, so they tell nothing about the account); attempt limits;
    /// the account lockout (`auth_login_attempts`, [`crate::lockout`]); password (verified
    /// against a dummy hash when the email is unknown, so every wrong answer takes as long); status; IP allow-list (only after the password, so it reveals nothing to
    /// others); OTP. Errors: INVALID_PAYLOAD (missing or too long email/password/otp),
    /// REQUESTS_EXCEEDED, ROUTE_NOT_FOUND (AUTH_DISABLE_DEFAULT), INVALID_CREDENTIALS,
    /// INVALID_IP, INVALID_OTP, SERVICE_UNAVAILABLE (database, Redis, argon2 queue full).
    pub async fn login(&self, req: LoginRequest, ip: Option<IpAddr>, client: &Client) -> Result<TokenReply, ApiError> {
        if self.settings.disable_default {
            return Err(ApiError::route_not_found("/auth/login"));
        }
        let budgets = &self.settings.budgets;
        access_token::within_budget("email", &req.email, budgets.email)?;
        self.settings.password_policy.check_presented(&req.password)?;
        access_token::within_budget("otp", req.otp.as_deref().unwrap_or(""), budgets.otp)?;
        if req.email.trim().is_empty() || req.password.is_empty() {
            return Err(ApiError::invalid_payload("\"email\" and \"password\" are required"));
        }
        if !looks_like_email(req.email.trim()) {
            return Err(ApiError::invalid_payload("\"email\" must be a valid email"));
        }
        self.attempts.check("login", req.email.trim(), ip).await?;
        let user = users::by_email(&self.pool, req.email.trim()).await.map_err(crate::db_error)?;
        let lockout_limit = system_tables::settings::login_attempts(&self.pool).await.map_err(crate::db_error)?;
        let mut suspended = false;
        if let Some(u) = user.as_ref().filter(|u| u.is_active() && u.password_hash.is_some()) {
            suspended = crate::lockout::attempt(self.sessions.redis(), &self.pool, &u.id, lockout_limit).await? == crate::lockout::Verdict::Suspended;
        }
        let hash = user.as_ref().and_then(|u| u.password_hash.clone()).unwrap_or_else(|| self.dummy_hash.clone());
        let password_ok = self.settings.hasher.verify(req.password, hash).await?;
        let user = match user {
            Some(u) if password_ok && !suspended && u.password_hash.is_some() && u.is_active() => u,
            _ => return Err(ApiError::invalid_credentials()),
        };
        if !ip_allowed(&user, ip) {
            return Err(ApiError::invalid_ip());
        }
        if let Some(secret) = &user.tfa_secret {
            let otp = req.otp.as_deref().filter(|o| !o.trim().is_empty()).ok_or_else(crate::tfa::invalid_otp)?;
            self.check_otp(&user.id, secret, otp).await?;
        }
        if lockout_limit.is_some() {
            crate::lockout::reset(self.sessions.redis(), &user.id).await?;
        }
        let reply = self.open_session(&user, SessionMode::try_from(req.mode).unwrap_or(SessionMode::Json), client).await?;
        self.touch(&user.id).await;
        Ok(reply)
    }

    /// `Refresh`: rotates the refresh token (or the session behind a session token) and returns
    /// new tokens in `mode`. Errors: INVALID_PAYLOAD (no token), INVALID_CREDENTIALS (unknown,
    /// ended or replayed session; inactive or deleted user: that login is ended too),
    /// TOKEN_EXPIRED / INVALID_TOKEN (session token), INVALID_IP, SERVICE_UNAVAILABLE.
    pub async fn refresh(&self, req: RefreshRequest, ip: Option<IpAddr>) -> Result<TokenReply, ApiError> {
        let sid = self.session_id(&req.refresh_token, &req.session_token, false)?;
        let (user_id, family) = match self.sessions.rotate(&sid).await? {
            Rotation::Accepted { user, family } => (user, family),
            Rotation::Unknown | Rotation::Replayed => return Err(ApiError::invalid_credentials()),
        };
        let mode = SessionMode::try_from(req.mode).unwrap_or(SessionMode::Json);
        if let Some(share) = crate::sessions::shared(&user_id) {
            return self.refresh_share(share, &sid, mode, &family).await;
        }
        let Some(user) = users::by_id(&self.pool, &user_id).await.map_err(crate::db_error)?.filter(Identity::is_active) else {
            // Suspended or deleted meanwhile: this login is over for good.
            self.sessions.end(&sid).await?;
            return Err(ApiError::invalid_credentials());
        };
        if !ip_allowed(&user, ip) {
            return Err(ApiError::invalid_ip());
        }
        self.tokens(TokenHolder::User(&user), mode, Some(&family)).await
    }

    /// `Logout`: ends the session of the refresh token or session token (an expired session
    /// token still ends its session). Unknown tokens succeed. Errors: INVALID_PAYLOAD (no
    /// token), SERVICE_UNAVAILABLE.
    pub async fn logout(&self, req: LogoutRequest) -> Result<(), ApiError> {
        match self.session_id(&req.refresh_token, &req.session_token, true) {
            Ok(sid) => self.sessions.end(&sid).await,
            Err(e) if e.code == ErrorCode::InvalidPayload => Err(e),
            // A token that is not ours ends nothing: 204 all the same (Directus).
            Err(_) => Ok(()),
        }
    }

    /// The session id behind a refresh token (its hash) or a session token (its `session`
    /// claim; verified, expiry checked unless `expired_ok`). Errors: INVALID_PAYLOAD (no token,
    /// or one longer than AUTH_MAX_TOKEN_LENGTH), TOKEN_EXPIRED, INVALID_TOKEN.
    fn session_id(&self, refresh_token: &str, session_token: &str, expired_ok: bool) -> Result<String, ApiError> {
        access_token::within_budget("refresh_token", refresh_token, self.settings.budgets.token)?;
        access_token::within_budget("session_token", session_token, self.settings.budgets.token)?;
        if !refresh_token.is_empty() {
            return Ok(access_token::sha256_hex(refresh_token));
        }
        if session_token.is_empty() {
            return Err(ApiError::invalid_payload("The refresh token is required in either the payload or cookie"));
        }
        let keys = self.keys.verifying();
        let claims: Claims = if expired_ok { keys.verify_ignoring_expiry(session_token, ACCESS_ISSUER) } else { keys.verify(session_token, ACCESS_ISSUER) }
            .map_err(VerifyError::to_api_error)?;
        claims.session.ok_or_else(|| VerifyError::Invalid.to_api_error())
    }

    /// Opens a new login session for `user` and returns its tokens; the login is recorded in
    /// the activity first (with `client`), so no session exists without its record. Errors:
    /// SERVICE_UNAVAILABLE (database, Redis).
    pub async fn open_session(&self, user: &Identity, mode: SessionMode, client: &Client) -> Result<TokenReply, ApiError> {
        let login = system_tables::activity::Activity {
            action: "login",
            user: Some(&user.id),
            ip: client.ip.as_deref(),
            user_agent: client.user_agent.as_deref(),
            origin: client.origin.as_deref(),
            collection: "directus_users",
            item: &user.id,
        };
        system_tables::activity::record(&self.pool, &login).await.map_err(crate::db_error)?;
        self.tokens(TokenHolder::User(user), mode, None).await
    }

    /// Issues a refresh token in `family` (a new family when `None`) and the access or session
    /// token for `mode`, for a user or a share session.
    pub(crate) async fn tokens(&self, holder: TokenHolder<'_>, mode: SessionMode, family: Option<&str>) -> Result<TokenReply, ApiError> {
        let s = &self.settings;
        let session_mode = mode == SessionMode::Session;
        let (token_ttl, session_ttl) = if session_mode { (s.session_ttl, s.session_ttl) } else { (s.access_ttl, s.refresh_ttl) };
        let owner = holder.session_owner();
        let issued = match family {
            // The login was revoked while this refresh was under way.
            Some(f) => self.sessions.issue(&owner, f, session_ttl).await?.ok_or_else(ApiError::invalid_credentials)?,
            None => self.sessions.open(&owner, session_ttl).await?,
        };
        let access_token = self.sign_access(holder, session_mode.then_some(issued.sid), issued.family, token_ttl)?;
        Ok(TokenReply {
            access_token,
            expires_ms: token_ttl.as_millis() as i64,
            refresh_token: if session_mode { String::new() } else { issued.token },
            mode: mode as i32,
            cookie_ttl_ms: session_ttl.as_millis() as i64,
        })
    }

    /// Signs an access token (or, with `session`, a session token) for `holder` in login
    /// `family`, living `ttl`. A share session's claims are Directus's: `share`, `role: null`,
    /// no app or admin access, no `id`.
    fn sign_access(&self, holder: TokenHolder<'_>, session: Option<String>, family: String, ttl: Duration) -> Result<String, ApiError> {
        let now = access_token::now_ms() / 1000;
        let (id, role, app_access, admin_access, share) = match holder {
            TokenHolder::User(user) => (user.id.clone(), user.role.clone(), user.app_access, user.admin_access, None),
            TokenHolder::Share(share) => (String::new(), None, false, false, Some(share.to_owned())),
        };
        let claims = Claims {
            id,
            role,
            app_access,
            admin_access,
            session,
            family: Some(family),
            share,
            iat: now,
            exp: now + ttl.as_secs().max(1),
            iss: ACCESS_ISSUER.into(),
        };
        self.keys.sign(&claims).map_err(|e| ApiError::internal_because(format!("signing a token failed: {e}")))
    }

    /// Records the time of the user's last sign-in (best effort).
    async fn touch(&self, user_id: &str) {
        if let Err(e) = system_tables::users::touch_last_access(&self.pool, user_id).await {
            tracing::warn!(error = %e, "recording last_access failed");
        }
    }
}

/// Whether `s` has the shape of an email address (`local@domain.tld`, no spaces), as Directus
/// checks the login payload before looking the user up (400 INVALID_PAYLOAD otherwise).
pub(crate) fn looks_like_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else { return false };
    !local.is_empty()
        && !s.chars().any(char::is_whitespace)
        && !domain.contains('@')
        && domain.split('.').count() >= 2
        && domain.split('.').all(|label| !label.is_empty())
}

#[cfg(test)]
mod tests {
    use super::looks_like_email;

    #[test]
    fn email_shapes() {
        assert!(looks_like_email("admin@example.com"));
        assert!(looks_like_email("a.b+c@mail.example.org"));
        for bad in ["not-an-email", "@example.com", "a@", "a@b", "a@b..c", "a b@example.com", "a@b@example.com", "a@.com"] {
            assert!(!looks_like_email(bad), "{bad}");
        }
    }
}
