//! Two-factor authentication with TOTP (RFC 6238: SHA-1, 6 digits, 30 s steps, as
//! authenticator apps expect; one step of clock skew either way). Directus's flow: generate a
//! secret (password required), enable it with a first code, disable it with a current code. A
//! code is accepted once: the last used step is kept in Redis (`totp-used:<user>`).
//!
//! The secret `generate` makes is kept pending in Redis (`tfa-pending:<user>`, for
//! [`PENDING_TTL`]); `enable` accepts only that secret (the client sends it back, as the
//! Directus SDK's `enableTwoFactor(secret, otp)` does), so a stolen access token alone, without
//! the password, cannot switch TOTP on with a secret of the thief's choosing and lock the owner
//! out (docs/security.md "Sessions").

use crate::Auth;
use cdapi_proto::v1::TfaSecret;
use cdapi_proto::{ApiError, ErrorCode};
use std::net::IpAddr;
use system_tables::users::Identity;
use totp_rs::{Algorithm, Secret, TOTP};

/// Steps of 30 s.
const STEP: u64 = 30;

/// How long a generated secret waits for `enable` (10 minutes: time to scan it and type a
/// first code).
pub const PENDING_TTL: std::time::Duration = std::time::Duration::from_secs(600);

/// INVALID_PAYLOAD for an `enable` whose secret is not the one `generate` made for the user.
fn not_generated() -> ApiError {
    ApiError::invalid_payload("\"secret\" is not the secret generated for this user: generate one first (it expires after 10 minutes)")
}

/// INVALID_OTP with Directus's message.
pub fn invalid_otp() -> ApiError {
    ApiError::new(ErrorCode::InvalidOtp, "Invalid user OTP.")
}

/// Accepts the step only if it is later than the last one used. KEYS[1] = `totp-used:<user>`;
/// ARGV[1] = step, ARGV[2] = TTL (ms).
const USE_STEP: &str = r"
local last = tonumber(redis.call('GET', KEYS[1]) or '-1')
if tonumber(ARGV[1]) <= last then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
";

/// The TOTP of a base32 secret, labelled for authenticator apps. Errors: INVALID_PAYLOAD when
/// the secret is not valid base32 of at least 128 bits (RFC 4226's minimum, for the secrets made
/// here).
fn totp(secret: &str, issuer: &str, account: &str) -> Result<TOTP, ApiError> {
    let bytes = Secret::Encoded(secret.trim().to_owned()).to_bytes().map_err(|_| ApiError::invalid_payload("\"secret\" is not a base32 TOTP secret"))?;
    // otpauth labels may not contain ':'.
    TOTP::new(Algorithm::SHA1, 6, 1, STEP, bytes, Some(issuer.replace(':', " ")), account.replace(':', " "))
        .map_err(|_| ApiError::invalid_payload("\"secret\" is not a valid TOTP secret"))
}

/// Shortest enrolled secret accepted when checking a code, in bytes: Directus enrols 80-bit
/// secrets (otplib's default), and users who come from it keep theirs (docs/coming-from-directus.md). Secrets made here have 160 bits.
const MIN_ENROLLED_SECRET_BYTES: usize = 10;

/// The TOTP of a secret already enrolled, to check a code against. Errors: INVALID_PAYLOAD when
/// it is not base32 of at least [`MIN_ENROLLED_SECRET_BYTES`].
fn enrolled_totp(secret: &str, account: &str) -> Result<TOTP, ApiError> {
    let bytes = Secret::Encoded(secret.trim().to_owned()).to_bytes().map_err(|_| ApiError::invalid_payload("\"secret\" is not a base32 TOTP secret"))?;
    if bytes.len() < MIN_ENROLLED_SECRET_BYTES {
        return Err(ApiError::invalid_payload("\"secret\" is too short"));
    }
    Ok(TOTP::new_unchecked(Algorithm::SHA1, 6, 1, STEP, bytes, None, account.replace(':', " ")))
}

/// The step `code` belongs to (now, or one step either side), if any.
fn matching_step(totp: &TOTP, code: &str) -> Option<u64> {
    let now = access_token::now_ms() / 1000;
    let code = code.trim();
    [now.saturating_sub(STEP), now, now + STEP].into_iter().find(|t| totp.generate(*t) == code).map(|t| t / STEP)
}

impl Auth {
    /// Checks `code` against the user's `secret` and spends it. Errors: INVALID_OTP (wrong,
    /// or already used), SERVICE_UNAVAILABLE (Redis).
    pub async fn check_otp(&self, user_id: &str, secret: &str, code: &str) -> Result<(), ApiError> {
        let totp = enrolled_totp(secret, user_id).map_err(|_| invalid_otp())?;
        let step = matching_step(&totp, code).ok_or_else(invalid_otp)?;
        let redis = self.sessions.redis();
        let fresh: i64 = redis::Script::new(USE_STEP)
            .key(redis.key("totp-used", user_id))
            .arg(step)
            .arg(4 * STEP * 1000)
            .invoke_async(&mut redis.conn())
            .await
            .map_err(access_token::sessions::unavailable)?;
        if fresh == 1 { Ok(()) } else { Err(invalid_otp()) }
    }

    /// `GenerateTfa`: a new secret and its otpauth URL for the signed-in user, kept pending
    /// (the only secret [`Self::enable_tfa`] accepts, for [`PENDING_TTL`]; a new one replaces
    /// it). Errors: FORBIDDEN (no user), INVALID_PAYLOAD (TOTP already on, no
    /// password), INVALID_CREDENTIALS (wrong password), REQUESTS_EXCEEDED,
    /// SERVICE_UNAVAILABLE (Redis).
    pub async fn generate_tfa(&self, user: &Identity, password: String, ip: Option<IpAddr>) -> Result<TfaSecret, ApiError> {
        if user.tfa_secret.is_some() {
            return Err(ApiError::invalid_payload("TFA is already enabled for this user"));
        }
        if password.is_empty() {
            return Err(ApiError::invalid_payload("\"password\" is required"));
        }
        self.settings.password_policy.check_presented(&password)?;
        self.attempts.check("login", &user.email, ip).await?;
        let ok = match &user.password_hash {
            Some(hash) => self.settings.hasher.verify(password, hash.clone()).await?,
            None => false,
        };
        if !ok {
            return Err(ApiError::invalid_credentials());
        }
        let secret = Secret::generate_secret().to_encoded().to_string();
        let url = totp(&secret, &self.settings.project_name, &user.email)?.get_url();
        let redis = self.sessions.redis();
        redis::cmd("SET")
            .arg(redis.key("tfa-pending", &user.id))
            .arg(&secret)
            .arg("PX")
            .arg(PENDING_TTL.as_millis() as u64)
            .query_async::<()>(&mut redis.conn())
            .await
            .map_err(access_token::sessions::unavailable)?;
        Ok(TfaSecret { secret, otpauth_url: url })
    }

    /// `EnableTfa`: stores `secret` once `otp` proves the app has it; `secret` must be the one
    /// [`Self::generate_tfa`] made for this user (pending, not expired), which it then stops
    /// being. Errors: FORBIDDEN, INVALID_PAYLOAD (already on, a secret not generated for the
    /// user, or expired), INVALID_OTP, REQUESTS_EXCEEDED, SERVICE_UNAVAILABLE (Redis).
    pub async fn enable_tfa(&self, user: &Identity, secret: &str, otp: &str, ip: Option<IpAddr>) -> Result<(), ApiError> {
        if user.tfa_secret.is_some() {
            return Err(ApiError::invalid_payload("TFA is already enabled for this user"));
        }
        access_token::within_budget("secret", secret, self.settings.budgets.token)?;
        access_token::within_budget("otp", otp, self.settings.budgets.otp)?;
        let secret = secret.trim();
        let redis = self.sessions.redis();
        let pending_key = redis.key("tfa-pending", &user.id);
        let pending: Option<String> = redis::cmd("GET").arg(&pending_key).query_async(&mut redis.conn()).await.map_err(access_token::sessions::unavailable)?;
        // Compared through their hashes: the time taken tells nothing of the pending secret.
        if pending.is_none_or(|p| access_token::sha256_hex(&p) != access_token::sha256_hex(secret)) {
            return Err(not_generated());
        }
        self.attempts.check("otp", &user.id, ip).await?;
        self.check_otp(&user.id, secret, otp).await?;
        self.set_tfa_secret(&user.id, Some(secret)).await?;
        redis::cmd("DEL").arg(&pending_key).query_async::<()>(&mut redis.conn()).await.map_err(access_token::sessions::unavailable)
    }

    /// `DisableTfa`: removes the secret once `otp` is right. Errors: FORBIDDEN,
    /// INVALID_PAYLOAD (TOTP is off), INVALID_OTP, REQUESTS_EXCEEDED.
    pub async fn disable_tfa(&self, user: &Identity, otp: &str, ip: Option<IpAddr>) -> Result<(), ApiError> {
        access_token::within_budget("otp", otp, self.settings.budgets.otp)?;
        let secret = user.tfa_secret.as_deref().ok_or_else(|| ApiError::invalid_payload("TFA is not enabled for this user"))?;
        self.attempts.check("otp", &user.id, ip).await?;
        self.check_otp(&user.id, secret, otp).await?;
        self.set_tfa_secret(&user.id, None).await
    }

    async fn set_tfa_secret(&self, user_id: &str, secret: Option<&str>) -> Result<(), ApiError> {
        system_tables::users::set_tfa_secret(&self.pool, user_id, secret).await.map_err(crate::db_error)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn codes_match_their_step_only() -> Result<(), cdapi_proto::ApiError> {
        let secret = totp_rs::Secret::generate_secret().to_encoded().to_string();
        let t = super::totp(&secret, "cdapi", "a@example.com")?;
        let now = access_token::now_ms() / 1000;
        let code = t.generate(now);
        assert_eq!(super::matching_step(&t, &code), Some(now / 30));
        let old = t.generate(now - 120);
        assert_ne!(super::matching_step(&t, &old), Some(now / 30));
        assert!(super::totp("not base32!", "cdapi", "a").is_err());
        Ok(())
    }

    #[test]
    fn directus_enrolled_secrets_are_checked_but_never_made() -> Result<(), cdapi_proto::ApiError> {
        // 16 base32 characters: the 80-bit secrets Directus enrols.
        let directus = "JBSWY3DPEHPK3PXP";
        assert!(super::totp(directus, "cdapi", "a").is_err(), "new secrets need 128 bits");
        let t = super::enrolled_totp(directus, "a")?;
        let now = access_token::now_ms() / 1000;
        assert_eq!(super::matching_step(&t, &t.generate(now)), Some(now / 30));
        assert!(super::enrolled_totp("JBSWY3DP", "a").is_err(), "40 bits is too short");
        Ok(())
    }
}
