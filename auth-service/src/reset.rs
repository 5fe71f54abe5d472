//! Password reset in two steps (docs/authentication.md; Directus docs "Authentication").
//!
//! The request always succeeds at once: whether the email belongs to anyone is decided after
//! the reply, in a background task that signs a reset token and mails the link, so neither the
//! answer nor its timing tells. The token is a JWT (issuer [`RESET_ISSUER`], so it is never an
//! access token) carrying a fingerprint of the password hash it was made against: once the
//! password changes, it is void. A token is also spent on first use (`reset-used:<jti>` in
//! Redis), and expires after PASSWORD_RESET_TOKEN_TTL.

use crate::Auth;
use access_token::claims::RESET_ISSUER;
use cdapi_proto::ApiError;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::sync::Arc;
use system_tables::users::{self, Identity};

/// Claims of a password-reset token.
#[derive(Debug, Serialize, Deserialize)]
struct ResetClaims {
    /// The user's id.
    id: String,
    /// The user's email when the token was made.
    email: String,
    /// [`fingerprint`] of the password hash the token was made against.
    pwh: String,
    /// Unique id, spent on use.
    jti: String,
    iat: u64,
    exp: u64,
    iss: String,
}

/// A short digest of a password hash: changes whenever the password does.
fn fingerprint(password_hash: Option<&str>) -> String {
    let mut d = access_token::sha256_hex(password_hash.unwrap_or(""));
    d.truncate(16);
    d
}

impl Auth {
    /// `RequestPasswordReset`. Errors (the only ones, none depending on the email):
    /// INVALID_PAYLOAD (no email, or longer than AUTH_MAX_EMAIL_LENGTH; `reset_url` not on
    /// PASSWORD_RESET_URL_ALLOW_LIST), REQUESTS_EXCEEDED, SERVICE_UNAVAILABLE (Redis).
    pub async fn request_reset(self: &Arc<Self>, email: String, reset_url: Option<String>, ip: Option<IpAddr>) -> Result<(), ApiError> {
        access_token::within_budget("email", &email, self.settings.budgets.email)?;
        access_token::within_budget("reset_url", reset_url.as_deref().unwrap_or(""), self.settings.budgets.token)?;
        let email = email.trim().to_owned();
        if email.is_empty() {
            return Err(ApiError::invalid_payload("\"email\" is required"));
        }
        let target = match reset_url.filter(|u| !u.is_empty()) {
            Some(u) if crate::sso::url_allowed(&u, &self.settings.reset_url_allow_list) => u,
            Some(u) => return Err(ApiError::invalid_payload(format!("Url \"{u}\" can't be used to reset passwords"))),
            None => self.settings.reset_url.clone(),
        };
        self.attempts.check("reset", &email, ip).await?;
        let auth = self.clone();
        tokio::spawn(async move {
            if let Err(e) = auth.mail_reset_link(&email, &target).await {
                tracing::error!(error = %e, "sending a password reset mail failed");
            }
        });
        Ok(())
    }

    /// Mails the link when `email` belongs to an active user with a password sign-in.
    async fn mail_reset_link(&self, email: &str, target: &str) -> anyhow::Result<()> {
        let Some(user) = users::by_email(&self.pool, email).await? else { return Ok(()) };
        if !user.is_active() || user.provider != "default" {
            return Ok(());
        }
        let Some(mailer) = &self.mailer else {
            tracing::warn!("a password reset was requested for a known user, but EMAIL_SMTP_HOST is not set: no mail sent");
            return Ok(());
        };
        let now = access_token::now_ms() / 1000;
        let claims = ResetClaims {
            id: user.id.clone(),
            email: user.email.clone(),
            pwh: fingerprint(user.password_hash.as_deref()),
            jti: crate::sessions::random_token(16),
            iat: now,
            exp: now + self.settings.reset_ttl.as_secs().max(1),
            iss: RESET_ISSUER.into(),
        };
        let token = self.keys.sign(&claims)?;
        let mut link = url::Url::parse(target)?;
        link.query_pairs_mut().append_pair("token", &token);
        let body = format!(
            "Someone asked to reset the password of the {project} account {email}.\n\n\
             Open this link to choose a new password:\n\n{link}\n\n\
             The link works once and expires in {ttl}. If you did not ask for this, ignore this mail: your password stays as it is.\n",
            project = self.settings.project_name,
            email = user.email,
            ttl = humantime::format_duration(self.settings.reset_ttl),
        );
        mailer.send(&user.email, "Password Reset Request", body).await
    }

    /// `ResetPassword`: sets the new password and ends every session of the user.
    /// Errors: FORBIDDEN (bad, expired, used or outdated token; inactive user),
    /// FAILED_VALIDATION (policy), INVALID_PAYLOAD (missing fields, token longer than
    /// AUTH_MAX_TOKEN_LENGTH), SERVICE_UNAVAILABLE.
    pub async fn reset_password(&self, token: &str, password: String) -> Result<(), ApiError> {
        access_token::within_budget("token", token, self.settings.budgets.token)?;
        self.settings.password_policy.check_presented(&password)?;
        if token.is_empty() || password.is_empty() {
            return Err(ApiError::invalid_payload("\"token\" and \"password\" are required"));
        }
        let claims: ResetClaims = self.keys.verifying().verify(token, RESET_ISSUER).map_err(|_| ApiError::forbidden())?;
        self.settings.password_policy.check_new(&password)?;
        let user: Identity = users::by_id(&self.pool, &claims.id)
            .await
            .map_err(crate::db_error)?
            .filter(|u| u.is_active() && fingerprint(u.password_hash.as_deref()) == claims.pwh)
            .ok_or_else(ApiError::forbidden)?;
        // Spend the token before changing anything: of two concurrent uses, one wins.
        let redis = self.sessions.redis();
        let remaining_ms = (claims.exp * 1000).saturating_sub(access_token::now_ms()).max(1000);
        let first: Option<String> = redis::cmd("SET")
            .arg(redis.key("reset-used", &claims.jti))
            .arg(1)
            .arg("NX")
            .arg("PX")
            .arg(remaining_ms)
            .query_async(&mut redis.conn())
            .await
            .map_err(access_token::sessions::unavailable)?;
        if first.is_none() {
            return Err(ApiError::forbidden());
        }
        let hash = self.settings.hasher.hash(password).await?;
        let changed = system_tables::users::replace_password_hash(&self.pool, &user.id, &hash, user.password_hash.as_deref()).await.map_err(crate::db_error)?;
        if !changed {
            return Err(ApiError::forbidden());
        }
        redis.end_user_sessions(&user.id, None).await
    }
}
