//! Share sessions (docs/shares.md; Directus 11's `POST /shares/auth` and `GET /shares/info/:id`):
//! signing in to a share opens a refresh session like a user's login, whose tokens carry the
//! share's id (`share` claim) and no user; what they read is decided by core-service.
//!
//! Sign-in, in order: input lengths; attempt limits (kind `share`, keyed by the share and the
//! address together, so a link many people use is never locked by others; one address guesses
//! a share's password no faster than an account's); the share must be open, have uses left and
//! an active creator (`system_tables::shares`); its password, when it has one, must be given
//! and match (argon2). Every refusal is INVALID_CREDENTIALS. The use is then
//! counted in one conditional statement, so `max_uses` concurrent sign-ins never get more than
//! `max_uses` sessions (Directus lets `max_uses + 1` in). A refresh keeps the session going while
//! the share is open and its creator active; `max_uses` counts sign-ins, not refreshes (as
//! Directus).
//!
//! An invitation (`POST /shares/invite`) mails a link to the share to at most [`MAX_INVITES`]
//! addresses, sent after the reply (a slow mail server never holds the request); it counts
//! against the attempt limits (kind `invite`, per user and address).

use crate::Auth;
use crate::login::{TokenHolder, looks_like_email};
use cdapi_proto::ApiError;
use cdapi_proto::v1::{SessionMode, ShareInfoReply, ShareLoginRequest, TokenReply};
use std::net::IpAddr;
use system_tables::shares;
use system_tables::users::{Identity, Profile};

/// The longest `share` accepted (a UUID is 36 bytes).
const MAX_SHARE_ID: usize = 64;

/// The most addresses one invitation mails (each is a mail sent).
pub const MAX_INVITES: usize = 50;

/// The mails of one invitation, checked and ready to send.
pub struct Invitation {
    recipients: Vec<String>,
    subject: String,
    body: String,
}

/// Directus's `userName`: "first last", else the first name, else the email.
fn user_name(p: &Profile) -> String {
    match (p.first_name.as_deref().filter(|s| !s.is_empty()), p.last_name.as_deref().filter(|s| !s.is_empty())) {
        (Some(first), Some(last)) => format!("{first} {last}"),
        (Some(first), None) => first.to_owned(),
        _ if !p.email.is_empty() => p.email.clone(),
        _ => "Unknown User".to_owned(),
    }
}

impl Auth {
    /// `ShareLogin` (module docs). Errors: INVALID_PAYLOAD (no share, values too long),
    /// REQUESTS_EXCEEDED, INVALID_CREDENTIALS, SERVICE_UNAVAILABLE (database, Redis, hasher
    /// busy).
    pub async fn share_login(&self, req: ShareLoginRequest, ip: Option<IpAddr>) -> Result<TokenReply, ApiError> {
        let share = req.share.trim();
        access_token::within_budget("share", share, MAX_SHARE_ID)?;
        self.settings.password_policy.check_presented(&req.password)?;
        if share.is_empty() {
            return Err(ApiError::invalid_payload("\"share\" is required"));
        }
        // Per share and address: a link shared with many people is never locked by others.
        let account = match ip {
            Some(ip) => format!("{share}@{ip}"),
            None => share.to_owned(),
        };
        self.attempts.check("share", &account, ip).await?;
        let password = shares::sign_in_password(&self.pool, share).await.map_err(crate::db_error)?;
        let admitted = match password {
            None => false,
            Some(None) => true,
            Some(Some(_)) if req.password.is_empty() => false,
            Some(Some(hash)) => self.settings.hasher.verify(req.password, hash).await?,
        };
        if !admitted || !shares::count_use(&self.pool, share).await.map_err(crate::db_error)? {
            return Err(ApiError::invalid_credentials());
        }
        let mode = SessionMode::try_from(req.mode).unwrap_or(SessionMode::Json);
        self.tokens(TokenHolder::Share(share), mode, None).await
    }

    /// The next tokens of a share session in `family` (a refresh), if the share is still open
    /// and its creator active; else the session ends. Errors: INVALID_CREDENTIALS,
    /// SERVICE_UNAVAILABLE.
    pub async fn refresh_share(&self, share: &str, sid: &str, mode: SessionMode, family: &str) -> Result<TokenReply, ApiError> {
        let found = shares::by_id(&self.pool, share).await.map_err(crate::db_error)?;
        let creator = match found.as_ref().filter(|s| s.open).and_then(|s| s.user_created.as_deref()) {
            Some(id) => system_tables::users::by_id(&self.pool, id).await.map_err(crate::db_error)?,
            None => None,
        };
        if !creator.is_some_and(|c| c.is_active()) {
            self.sessions.end(sid).await?;
            return Err(ApiError::invalid_credentials());
        }
        self.tokens(TokenHolder::Share(share), mode, Some(family)).await
    }

    /// `ShareInfo`: the public facts of an open share. Errors: FORBIDDEN (unknown or closed),
    /// SERVICE_UNAVAILABLE.
    pub async fn share_info(&self, share: &str) -> Result<ShareInfoReply, ApiError> {
        let json = shares::info(&self.pool, share.trim()).await.map_err(crate::db_error)?.ok_or_else(ApiError::forbidden)?;
        Ok(ShareInfoReply { json })
    }

    /// `InviteToShare` for `user` (module docs): the mails to send. Errors: INVALID_PAYLOAD,
    /// REQUESTS_EXCEEDED, FORBIDDEN (unknown share), SERVICE_UNAVAILABLE.
    pub async fn share_invitation(&self, user: &Identity, share: &str, emails: &[String], ip: Option<IpAddr>) -> Result<Invitation, ApiError> {
        access_token::within_budget("share", share, MAX_SHARE_ID)?;
        if share.trim().is_empty() {
            return Err(ApiError::invalid_payload("\"share\" is required"));
        }
        if emails.is_empty() || emails.len() > MAX_INVITES {
            return Err(ApiError::invalid_payload(format!("\"emails\" must hold 1 to {MAX_INVITES} addresses")));
        }
        let mut recipients = Vec::with_capacity(emails.len());
        for email in emails {
            access_token::within_budget("emails", email, self.settings.budgets.email)?;
            if !looks_like_email(email.trim()) {
                return Err(ApiError::invalid_payload("\"emails\" must hold valid email addresses"));
            }
            recipients.push(email.trim().to_owned());
        }
        recipients.sort();
        recipients.dedup();
        self.attempts.check("invite", &user.id, ip).await?;
        let share = shares::by_id(&self.pool, share.trim()).await.map_err(crate::db_error)?.ok_or_else(ApiError::forbidden)?;
        let profile = system_tables::users::profile(&self.pool, &user.id).await.map_err(crate::db_error)?.ok_or_else(ApiError::forbidden)?;
        let name = user_name(&profile);
        let link = format!("{}/admin/shared/{}", self.settings.public_url, share.id);
        Ok(Invitation {
            recipients,
            subject: format!("{name} has shared an item with you"),
            body: format!("Hello!\n\n{name} has invited you to view an item in {}.\n\nOpen it: {link}\n", share.collection),
        })
    }

    /// Sends `invitation`'s mails; failures are logged (Directus's invitation does the same).
    pub async fn send_invitation(&self, invitation: Invitation) {
        let Some(mailer) = &self.mailer else {
            tracing::warn!("a share invitation needs EMAIL_SMTP_HOST: no mail sent");
            return;
        };
        for to in &invitation.recipients {
            if let Err(e) = mailer.send(to, &invitation.subject, invitation.body.clone()).await {
                tracing::warn!(error = %e, "a share invitation could not be mailed");
            }
        }
    }
}
