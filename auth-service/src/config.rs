//! auth-service settings from environment variables (documented in docs/configuration.md). Durations are
//! written with a unit, as Directus's are: `15m`, `7d`, `10s`, `500ms`.

use service_runtime::{env_list, env_opt, env_or};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Everything auth-service reads from its environment.
#[derive(Clone)]
pub struct Settings {
    /// DATABASE_URL (required): the database holding the system tables.
    pub database_url: String,
    /// DB_POOL_MAX (default 8).
    pub pool_max: u32,
    /// DB_ACQUIRE_TIMEOUT_MS (milliseconds, default 5000): longest wait for a pool connection;
    /// then 503.
    pub acquire_timeout_ms: u64,
    /// AUTH_GRPC_ADDR (default `127.0.0.1:50052`): gRPC listen address.
    pub grpc_addr: SocketAddr,
    /// REDIS_URL (default `redis://127.0.0.1:6379`): refresh sessions, reset-token use, SSO state.
    pub redis_url: String,
    /// REDIS_KEY_PREFIX (default `cdapi:`).
    pub redis_prefix: String,
    /// AUTH_KEYS_FILE: PEM file of one or more Ed25519 private keys (PKCS#8). Unset: a key is
    /// generated at start (tokens do not survive a restart; one replica only).
    pub keys_file: Option<PathBuf>,
    /// AUTH_SIGNING_KID: the id of the key that signs (default: the file's first key).
    pub signing_kid: Option<String>,
    /// ACCESS_TOKEN_TTL (default 15m).
    pub access_ttl: Duration,
    /// REFRESH_TOKEN_TTL (default 7d): lifetime of a refresh token, renewed at every refresh.
    pub refresh_ttl: Duration,
    /// SESSION_COOKIE_TTL (default 1d): lifetime of a session token (mode session).
    pub session_ttl: Duration,
    /// REFRESH_TOKEN_GRACE (default 10s): how long a rotated refresh token still refreshes.
    pub refresh_grace: Duration,
    /// PASSWORD_RESET_TOKEN_TTL (default 1d).
    pub reset_ttl: Duration,
    /// PUBLIC_URL (default `http://127.0.0.1:8055`): the API's public origin.
    pub public_url: String,
    /// PASSWORD_RESET_URL (default `<PUBLIC_URL>/admin/reset-password`): the mailed link's
    /// target when the request names none.
    pub reset_url: String,
    /// PASSWORD_RESET_URL_ALLOW_LIST (comma-separated URLs): the `reset_url`s a request may name.
    pub reset_url_allow_list: Vec<String>,
    /// PASSWORD_MIN_LENGTH (default 8, characters) and PASSWORD_MAX_LENGTH (default 1024,
    /// bytes): the password policy, shared with core-service.
    pub password_policy: access_token::passwords::Policy,
    /// PASSWORD_HASH_CONCURRENCY, PASSWORD_HASH_QUEUE_TIMEOUT_MS: the argon2 bound.
    pub hasher: access_token::passwords::Hasher,
    /// AUTH_MAX_*: input length budgets, checked before any work.
    pub budgets: Budgets,
    /// PROJECT_NAME (default `cdapi`): the sender's name in mails and the issuer in TOTP apps.
    pub project_name: String,
    /// EMAIL_*: the SMTP server; `None` when EMAIL_SMTP_HOST is unset (no mail is sent).
    pub mail: Option<MailSettings>,
    /// AUTH_RATE_LIMIT_*: attempt limits of logins, OTP checks and reset requests.
    pub attempts: AttemptLimits,
    /// AUTH_DISABLE_DEFAULT (default false): email/password login is off (SSO only).
    pub disable_default: bool,
    /// AUTH_PROVIDERS and AUTH_<NAME>_*: the SSO providers.
    pub providers: Vec<crate::sso::ProviderSettings>,
}

/// Attempt limits (docs/security.md "Budgets"), counted in Redis so replicas share them: within one
/// window of AUTH_RATE_LIMIT_DURATION, an attempt is refused once any of its counters is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptLimits {
    /// AUTH_RATE_LIMIT_DURATION (default 5m): the window.
    pub window: Duration,
    /// AUTH_RATE_LIMIT_POINTS (default 10): attempts per account from one address.
    pub per_account_address: u32,
    /// AUTH_RATE_LIMIT_ACCOUNT_POINTS (default 20): attempts per account from all addresses.
    pub per_account: u32,
    /// AUTH_RATE_LIMIT_IP_POINTS (default 100): attempts per address on all accounts.
    pub per_address: u32,
}

/// Input length budgets in bytes (docs/security.md "Budgets"), checked before any hashing, Redis or
/// database work; longer answers 400 INVALID_PAYLOAD. Passwords: [`Settings::password_policy`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budgets {
    /// AUTH_MAX_EMAIL_LENGTH (default 254, RFC 5321's longest address).
    pub email: usize,
    /// AUTH_MAX_OTP_LENGTH (default 16): TOTP codes.
    pub otp: usize,
    /// AUTH_MAX_TOKEN_LENGTH (default 4096): refresh, session and reset tokens, TOTP secrets,
    /// SSO codes and states.
    pub token: usize,
}

/// How auth-service sends mail.
#[derive(Clone)]
pub struct MailSettings {
    /// EMAIL_SMTP_HOST.
    pub host: String,
    /// EMAIL_SMTP_PORT (default 587, 465 with `tls`, 25 with `none`).
    pub port: u16,
    /// EMAIL_SMTP_TLS: `starttls` (default), `tls` (implicit) or `none`.
    pub tls: SmtpTls,
    /// EMAIL_SMTP_USER and EMAIL_SMTP_PASSWORD, when the server wants a login.
    pub credentials: Option<(String, String)>,
    /// EMAIL_FROM (default `no-reply@example.com`).
    pub from: String,
}

/// Transport security towards the SMTP server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmtpTls {
    /// Plain SMTP (local test servers only).
    None,
    /// STARTTLS, required.
    StartTls,
    /// TLS from the first byte (SMTPS).
    Tls,
}

/// Reads env var `name` as a duration with a unit (`15m`); `default` when unset.
/// Errors: the variable does not parse.
pub fn env_duration(name: &str, default: &str) -> anyhow::Result<Duration> {
    let v = env_opt(name).unwrap_or_else(|| default.to_owned());
    humantime::parse_duration(v.trim()).map_err(|e| anyhow::anyhow!("environment variable {name}={v:?} is not a duration such as 15m: {e}"))
}

impl Settings {
    /// Reads the settings. Errors: DATABASE_URL missing, a variable that does not parse, an
    /// SSO provider missing a required setting.
    pub fn from_env() -> anyhow::Result<Self> {
        let database_url = env_opt("DATABASE_URL").ok_or_else(|| anyhow::anyhow!("DATABASE_URL is required"))?;
        let public_url = env_or("PUBLIC_URL", "http://127.0.0.1:8055".to_string())?.trim_end_matches('/').to_owned();
        let mail = match env_opt("EMAIL_SMTP_HOST") {
            None => None,
            Some(host) => {
                let tls = match env_or("EMAIL_SMTP_TLS", "starttls".to_string())?.to_ascii_lowercase().as_str() {
                    "none" => SmtpTls::None,
                    "starttls" => SmtpTls::StartTls,
                    "tls" => SmtpTls::Tls,
                    other => anyhow::bail!("EMAIL_SMTP_TLS={other:?}: use none, starttls or tls"),
                };
                let default_port = match tls {
                    SmtpTls::None => 25,
                    SmtpTls::StartTls => 587,
                    SmtpTls::Tls => 465,
                };
                Some(MailSettings {
                    host,
                    port: env_or("EMAIL_SMTP_PORT", default_port)?,
                    tls,
                    credentials: env_opt("EMAIL_SMTP_USER").map(|u| (u, env_opt("EMAIL_SMTP_PASSWORD").unwrap_or_default())),
                    from: env_or("EMAIL_FROM", "no-reply@example.com".to_string())?,
                })
            }
        };
        Ok(Self {
            database_url,
            pool_max: env_or("DB_POOL_MAX", 8u32)?,
            acquire_timeout_ms: env_or("DB_ACQUIRE_TIMEOUT_MS", 5_000u64)?.max(1),
            grpc_addr: env_or("AUTH_GRPC_ADDR", SocketAddr::from(([127, 0, 0, 1], 50052)))?,
            redis_url: env_or("REDIS_URL", "redis://127.0.0.1:6379".to_string())?,
            redis_prefix: env_or("REDIS_KEY_PREFIX", "cdapi:".to_string())?,
            keys_file: env_opt("AUTH_KEYS_FILE").map(PathBuf::from),
            signing_kid: env_opt("AUTH_SIGNING_KID"),
            access_ttl: env_duration("ACCESS_TOKEN_TTL", "15m")?,
            refresh_ttl: env_duration("REFRESH_TOKEN_TTL", "7d")?,
            session_ttl: env_duration("SESSION_COOKIE_TTL", "1d")?,
            refresh_grace: env_duration("REFRESH_TOKEN_GRACE", "10s")?,
            reset_ttl: env_duration("PASSWORD_RESET_TOKEN_TTL", "1d")?,
            reset_url: env_opt("PASSWORD_RESET_URL").unwrap_or_else(|| format!("{public_url}/admin/reset-password")),
            public_url,
            reset_url_allow_list: env_list("PASSWORD_RESET_URL_ALLOW_LIST"),
            password_policy: access_token::passwords::Policy::from_env()?,
            hasher: access_token::passwords::Hasher::from_env()?,
            budgets: Budgets {
                email: env_or("AUTH_MAX_EMAIL_LENGTH", 254usize)?,
                otp: env_or("AUTH_MAX_OTP_LENGTH", 16usize)?,
                token: env_or("AUTH_MAX_TOKEN_LENGTH", 4096usize)?,
            },
            project_name: env_or("PROJECT_NAME", "cdapi".to_string())?,
            mail,
            attempts: AttemptLimits {
                window: env_duration("AUTH_RATE_LIMIT_DURATION", "5m")?.max(Duration::from_millis(1)),
                per_account_address: env_or("AUTH_RATE_LIMIT_POINTS", 10u32)?.max(1),
                per_account: env_or("AUTH_RATE_LIMIT_ACCOUNT_POINTS", 20u32)?.max(1),
                per_address: env_or("AUTH_RATE_LIMIT_IP_POINTS", 100u32)?.max(1),
            },
            disable_default: env_or("AUTH_DISABLE_DEFAULT", false)?,
            providers: crate::sso::ProviderSettings::from_env()?,
        })
    }
}

impl std::fmt::Debug for Settings {
    /// The settings without secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("grpc_addr", &self.grpc_addr)
            .field("redis_prefix", &self.redis_prefix)
            .field("keys_file", &self.keys_file)
            .field("signing_kid", &self.signing_kid)
            .field("access_ttl", &self.access_ttl)
            .field("refresh_ttl", &self.refresh_ttl)
            .field("session_ttl", &self.session_ttl)
            .field("refresh_grace", &self.refresh_grace)
            .field("reset_ttl", &self.reset_ttl)
            .field("public_url", &self.public_url)
            .field("reset_url", &self.reset_url)
            .field("reset_url_allow_list", &self.reset_url_allow_list)
            .field("password_policy", &self.password_policy)
            .field("password_hash_concurrency", &self.hasher.concurrency())
            .field("password_hash_queue_timeout", &self.hasher.queue_timeout())
            .field("budgets", &self.budgets)
            .field("mail", &self.mail.as_ref().map(|m| (&m.host, m.port, m.tls, &m.from, m.credentials.is_some())))
            .field("attempts", &self.attempts)
            .field("disable_default", &self.disable_default)
            .field("providers", &self.providers.iter().map(|p| (&p.name, p.driver.as_str())).collect::<Vec<_>>())
            .finish()
    }
}
