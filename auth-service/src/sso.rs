//! Single sign-on through external providers (docs/authentication.md: `GET /auth`,
//! `GET /auth/login/:provider`),
//! configured as Directus configures them:
//!
//! - AUTH_PROVIDERS: comma-separated provider names; per provider `<P>` (the name upper-cased):
//! - AUTH_<P>_DRIVER: `openid` (OpenID Connect with discovery) or `oauth2` (plain OAuth 2.0);
//! - AUTH_<P>_CLIENT_ID, AUTH_<P>_CLIENT_SECRET;
//! - openid: AUTH_<P>_ISSUER_URL; oauth2: AUTH_<P>_AUTHORIZE_URL, AUTH_<P>_ACCESS_URL,
//!   AUTH_<P>_PROFILE_URL;
//! - AUTH_<P>_SCOPE (default `openid profile email` / `email`), AUTH_<P>_IDENTIFIER_KEY (the
//!   user's id at the provider: default `sub` / `email`), AUTH_<P>_EMAIL_KEY (default `email`),
//!   AUTH_<P>_ICON, AUTH_<P>_ALLOW_PUBLIC_REGISTRATION (default false),
//!   AUTH_<P>_DEFAULT_ROLE_ID (role of registered users), AUTH_<P>_REDIRECT_ALLOW_LIST
//!   (comma-separated URLs the browser may be sent back to), AUTH_<P>_REQUIRE_VERIFIED_EMAIL
//!   (default true: see below).
//!
//! The flow is the authorization-code flow with PKCE (S256), `state` and, for OpenID, `nonce`;
//! they are kept in Redis for 10 minutes under `sso:<state>` and used once. The provider sends
//! the browser back to `<PUBLIC_URL>/auth/login/<name>/callback`. The user is found by
//! (provider, identifier); else a user pre-created for this provider with that email (and no
//! identifier yet) is linked, but only when the provider says the email is verified (the
//! profile's `email_verified` is true; docs/security.md "Other defences": anyone can claim an unverified address at
//! many providers), unless AUTH_<P>_REQUIRE_VERIFIED_EMAIL=false; else, with public
//! registration, created.

use crate::Auth;
use access_token::client::Client;
use cdapi_proto::v1::{FinishSsoRequest, Provider, SessionMode, SsoRedirect, SsoResult, StartSsoRequest};
use cdapi_proto::{ApiError, ErrorCode};
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AccessToken, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, HttpRequest, HttpResponse, IssuerUrl, Nonce, OAuth2TokenResponse,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, TokenResponse, TokenUrl,
};
use serde::{Deserialize, Serialize};
use service_runtime::env_list;
use service_runtime::env_opt;
use std::net::IpAddr;
use std::time::Duration;
use system_tables::users::{self, Identity};

/// How long a begun SSO login may take (state kept in Redis).
const STATE_TTL: Duration = Duration::from_secs(600);

/// The protocol a provider speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// OpenID Connect, endpoints from discovery, identity from the verified ID token.
    OpenId,
    /// OAuth 2.0, identity from a profile URL.
    OAuth2,
}

impl Driver {
    /// As `GET /auth` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenId => "openid",
            Self::OAuth2 => "oauth2",
        }
    }
}

/// One configured provider.
#[derive(Clone, Debug)]
pub struct ProviderSettings {
    /// Its name in URLs (`/auth/login/<name>`).
    pub name: String,
    /// openid or oauth2.
    pub driver: Driver,
    client_id: String,
    client_secret: Option<String>,
    issuer_url: Option<String>,
    authorize_url: Option<String>,
    access_url: Option<String>,
    profile_url: Option<String>,
    scope: Vec<String>,
    identifier_key: String,
    email_key: String,
    icon: Option<String>,
    allow_registration: bool,
    default_role: Option<String>,
    redirect_allow_list: Vec<String>,
    require_verified_email: bool,
}

impl ProviderSettings {
    /// Every provider of AUTH_PROVIDERS. Errors: a provider without a driver, client id or the
    /// URLs its driver needs.
    pub fn from_env() -> anyhow::Result<Vec<Self>> {
        env_list("AUTH_PROVIDERS").into_iter().map(|name| Self::one(&name)).collect()
    }

    fn one(name: &str) -> anyhow::Result<Self> {
        let p = format!("AUTH_{}_", name.to_uppercase());
        let var = |k: &str| env_opt(&format!("{p}{k}"));
        let need = |k: &str| var(k).ok_or_else(|| anyhow::anyhow!("SSO provider {name}: {p}{k} is required"));
        let driver = match need("DRIVER")?.to_ascii_lowercase().as_str() {
            "openid" => Driver::OpenId,
            "oauth2" => Driver::OAuth2,
            other => anyhow::bail!("SSO provider {name}: driver {other:?} is not supported (openid, oauth2)"),
        };
        let (issuer_url, authorize_url, access_url, profile_url) = match driver {
            Driver::OpenId => (Some(need("ISSUER_URL")?), None, None, None),
            Driver::OAuth2 => (None, Some(need("AUTHORIZE_URL")?), Some(need("ACCESS_URL")?), Some(need("PROFILE_URL")?)),
        };
        let default_scope = if driver == Driver::OpenId { "openid profile email" } else { "email" };
        Ok(Self {
            name: name.to_owned(),
            driver,
            client_id: need("CLIENT_ID")?,
            client_secret: var("CLIENT_SECRET"),
            issuer_url,
            authorize_url,
            access_url,
            profile_url,
            scope: var("SCOPE").unwrap_or_else(|| default_scope.into()).split_whitespace().map(str::to_owned).collect(),
            identifier_key: var("IDENTIFIER_KEY").unwrap_or_else(|| if driver == Driver::OpenId { "sub".into() } else { "email".into() }),
            email_key: var("EMAIL_KEY").unwrap_or_else(|| "email".into()),
            icon: var("ICON"),
            allow_registration: var("ALLOW_PUBLIC_REGISTRATION").is_some_and(|v| v.eq_ignore_ascii_case("true")),
            default_role: var("DEFAULT_ROLE_ID"),
            redirect_allow_list: env_list(&format!("{p}REDIRECT_ALLOW_LIST")),
            require_verified_email: !var("REQUIRE_VERIFIED_EMAIL").is_some_and(|v| v.eq_ignore_ascii_case("false")),
        })
    }

    /// The provider as `GET /auth` lists it.
    pub fn listed(&self) -> Provider {
        Provider { name: self.name.clone(), driver: self.driver.as_str().into(), icon: self.icon.clone() }
    }
}

/// Who the user is at the provider.
struct AtProvider {
    /// The profile's AUTH_<P>_IDENTIFIER_KEY.
    identifier: String,
    /// The profile's AUTH_<P>_EMAIL_KEY, if any.
    email: Option<String>,
    /// The profile's `email_verified` is true.
    email_verified: bool,
}

/// A begun login, kept in Redis under its state.
#[derive(Serialize, Deserialize)]
struct Pending {
    provider: String,
    pkce_verifier: String,
    nonce: String,
    redirect: Option<String>,
    mode: i32,
}

/// The configured providers, with what discovery found (fetched on first use, so the service
/// starts while a provider is down).
pub struct Providers {
    list: Vec<ProviderSettings>,
    discovered: Vec<tokio::sync::OnceCell<CoreProviderMetadata>>,
    http: Http,
}

/// The HTTP client of the OAuth2/OpenID exchanges (reqwest; redirects are not followed, so a
/// code or secret can never be forwarded elsewhere).
pub struct Http(reqwest::Client);

impl<'c> openidconnect::AsyncHttpClient<'c> for Http {
    type Error = HttpError;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<HttpResponse, HttpError>> + Send + 'c>>;

    fn call(&'c self, req: HttpRequest) -> Self::Future {
        Box::pin(async move {
            let res = self.0.execute(reqwest::Request::try_from(req)?).await?;
            let mut out = openidconnect::http::Response::builder().status(res.status().as_u16());
            for (k, v) in res.headers() {
                out = out.header(k.as_str(), v.as_bytes());
            }
            Ok(out.body(res.bytes().await?.to_vec())?)
        })
    }
}

/// What the HTTP client of the OAuth2/OpenID flows fails with.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The request could not be sent or read.
    #[error("{0}")]
    Reqwest(#[from] reqwest::Error),
    /// The response could not be rebuilt.
    #[error("{0}")]
    Http(#[from] openidconnect::http::Error),
}

impl Providers {
    /// The providers of `list`. Errors: the HTTP client cannot be built.
    pub fn new(list: Vec<ProviderSettings>) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            // The token endpoint must not redirect us (a code or secret could leak).
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()?;
        let discovered = list.iter().map(|_| tokio::sync::OnceCell::new()).collect();
        Ok(Self { list, discovered, http: Http(http) })
    }

    /// The providers as listed by `GET /auth`.
    pub fn listed(&self) -> Vec<Provider> {
        self.list.iter().map(ProviderSettings::listed).collect()
    }

    fn find(&self, name: &str) -> Result<(usize, &ProviderSettings), ApiError> {
        self.list
            .iter()
            .enumerate()
            .find(|(_, p)| p.name == name)
            .ok_or_else(|| ApiError::new(ErrorCode::RouteNotFound, format!("Route /auth/login/{name} doesn't exist.")))
    }

    async fn metadata(&self, i: usize, p: &ProviderSettings) -> Result<&CoreProviderMetadata, ApiError> {
        let issuer = p.issuer_url.clone().unwrap_or_default();
        self.discovered[i]
            .get_or_try_init(|| async {
                let issuer = IssuerUrl::new(issuer).map_err(|e| provider_error(&p.name, &e))?;
                CoreProviderMetadata::discover_async(issuer, &self.http).await.map_err(|e| provider_error(&p.name, &e))
            })
            .await
    }
}

/// SERVICE_UNAVAILABLE for a provider that cannot be used (cause logged).
fn provider_error(name: &str, e: &dyn std::fmt::Display) -> ApiError {
    tracing::warn!(provider = name, error = %e, "SSO provider failed");
    let mut err = ApiError::new(ErrorCode::ServiceUnavailable, format!("Service \"{name}\" is unavailable."));
    err.extensions.insert("service".into(), name.into());
    err
}

/// Whether `url` is on `allow` (same scheme, host, port and path; query ignored).
pub fn url_allowed(url: &str, allow: &[String]) -> bool {
    let key = |u: &str| {
        url::Url::parse(u)
            .ok()
            .map(|u| (u.scheme().to_owned(), u.host_str().map(str::to_owned), u.port_or_known_default(), u.path().trim_end_matches('/').to_owned()))
    };
    key(url).is_some_and(|k| allow.iter().any(|a| key(a).as_ref() == Some(&k)))
}

impl Auth {
    /// `StartSso`: the provider's authorization URL. Errors: ROUTE_NOT_FOUND (no such
    /// provider), INVALID_PAYLOAD (redirect not allowed), SERVICE_UNAVAILABLE (provider or Redis).
    pub async fn start_sso(&self, req: StartSsoRequest) -> Result<SsoRedirect, ApiError> {
        let (i, p) = self.providers.find(&req.provider)?;
        if let Some(r) = &req.redirect
            && !url_allowed(r, &p.redirect_allow_list)
        {
            return Err(ApiError::invalid_payload(format!("Redirect \"{r}\" is not on the allow-list of provider \"{}\"", p.name)));
        }
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let scopes = p.scope.iter().map(|s| Scope::new(s.clone()));
        let (url, state, nonce) = match p.driver {
            Driver::OpenId => {
                let client = CoreClient::from_provider_metadata(
                    self.providers.metadata(i, p).await?.clone(),
                    ClientId::new(p.client_id.clone()),
                    p.client_secret.clone().map(ClientSecret::new),
                )
                .set_redirect_uri(self.callback_url(p)?);
                let (url, state, nonce) = client
                    .authorize_url(CoreAuthenticationFlow::AuthorizationCode, CsrfToken::new_random, Nonce::new_random)
                    .add_scopes(scopes)
                    .set_pkce_challenge(challenge)
                    .url();
                (url, state, nonce.secret().clone())
            }
            Driver::OAuth2 => {
                let (url, state) = self.oauth2_client(p)?.authorize_url(CsrfToken::new_random).add_scopes(scopes).set_pkce_challenge(challenge).url();
                (url, state, String::new())
            }
        };
        let pending = Pending { provider: p.name.clone(), pkce_verifier: verifier.secret().clone(), nonce, redirect: req.redirect, mode: req.mode };
        let json = serde_json::to_string(&pending).map_err(ApiError::internal_because)?;
        let redis = self.sessions.redis();
        redis::cmd("SET")
            .arg(redis.key("sso", state.secret()))
            .arg(json)
            .arg("PX")
            .arg(STATE_TTL.as_millis() as u64)
            .query_async::<()>(&mut redis.conn())
            .await
            .map_err(access_token::sessions::unavailable)?;
        Ok(SsoRedirect { url: url.to_string(), state: state.secret().clone() })
    }

    /// `FinishSso`: exchanges the code, identifies the user and opens a session. Failures after
    /// the state is known come back as `error_code` with the redirect, so the browser can be
    /// sent back with `?reason=`; without a known state they are errors: FORBIDDEN (unknown,
    /// used or foreign state), ROUTE_NOT_FOUND.
    pub async fn finish_sso(&self, req: FinishSsoRequest, ip: Option<IpAddr>, client: &Client) -> Result<SsoResult, ApiError> {
        let (i, p) = self.providers.find(&req.provider)?;
        for (field, value) in [("state", &req.state), ("code", &req.code), ("error", &req.error)] {
            access_token::within_budget(field, value, self.settings.budgets.token)?;
        }
        if req.state.is_empty() || req.state != req.state_cookie {
            return Err(ApiError::forbidden());
        }
        let redis = self.sessions.redis();
        let json: Option<String> =
            redis::cmd("GETDEL").arg(redis.key("sso", &req.state)).query_async(&mut redis.conn()).await.map_err(access_token::sessions::unavailable)?;
        let pending: Pending =
            json.and_then(|j| serde_json::from_str(&j).ok()).filter(|p: &Pending| p.provider == req.provider).ok_or_else(ApiError::forbidden)?;
        let redirect = pending.redirect.clone();
        let outcome = async {
            if !req.error.is_empty() || req.code.is_empty() {
                return Err(ApiError::invalid_credentials());
            }
            let at_provider = self.identify_at_provider(i, p, &req.code, &pending).await?;
            let user = self.sso_user(p, &at_provider).await?;
            if !crate::login::ip_allowed(&user, ip) {
                return Err(ApiError::invalid_ip());
            }
            let mode = match SessionMode::try_from(pending.mode) {
                Ok(SessionMode::Session) => SessionMode::Session,
                _ => SessionMode::Cookie,
            };
            self.open_session(&user, mode, client).await
        }
        .await;
        match outcome {
            Ok(tokens) => Ok(SsoResult { tokens: Some(tokens), redirect, error_code: String::new() }),
            Err(e) if redirect.is_some() => {
                tracing::info!(provider = %p.name, code = %e.code, "SSO login failed");
                Ok(SsoResult { tokens: None, redirect, error_code: e.code.as_str().into() })
            }
            Err(e) => Err(e),
        }
    }

    fn callback_url(&self, p: &ProviderSettings) -> Result<RedirectUrl, ApiError> {
        RedirectUrl::new(format!("{}/auth/login/{}/callback", self.settings.public_url, p.name)).map_err(|e| provider_error(&p.name, &e))
    }

    #[allow(clippy::type_complexity)]
    fn oauth2_client(
        &self,
        p: &ProviderSettings,
    ) -> Result<
        oauth2::basic::BasicClient<oauth2::EndpointSet, oauth2::EndpointNotSet, oauth2::EndpointNotSet, oauth2::EndpointNotSet, oauth2::EndpointSet>,
        ApiError,
    > {
        let bad = |e: &dyn std::fmt::Display| provider_error(&p.name, e);
        let auth_url = AuthUrl::new(p.authorize_url.clone().unwrap_or_default()).map_err(|e| bad(&e))?;
        let token_url = TokenUrl::new(p.access_url.clone().unwrap_or_default()).map_err(|e| bad(&e))?;
        let mut client = oauth2::basic::BasicClient::new(ClientId::new(p.client_id.clone()))
            .set_auth_uri(auth_url)
            .set_token_uri(token_url)
            .set_redirect_uri(self.callback_url(p)?);
        if let Some(secret) = &p.client_secret {
            client = client.set_client_secret(ClientSecret::new(secret.clone()));
        }
        Ok(client)
    }

    /// Exchanges the code and returns who the user is at the provider.
    /// Errors: INVALID_CREDENTIALS (code refused, ID token invalid, no identifier),
    /// SERVICE_UNAVAILABLE.
    async fn identify_at_provider(&self, i: usize, p: &ProviderSettings, code: &str, pending: &Pending) -> Result<AtProvider, ApiError> {
        let refused = |e: &dyn std::fmt::Display| {
            tracing::warn!(provider = %p.name, error = %e, "SSO code exchange or verification failed");
            ApiError::invalid_credentials()
        };
        let http = &self.providers.http;
        let verifier = PkceCodeVerifier::new(pending.pkce_verifier.clone());
        let code = AuthorizationCode::new(code.to_owned());
        let profile: serde_json::Value = match p.driver {
            Driver::OpenId => {
                let client = CoreClient::from_provider_metadata(
                    self.providers.metadata(i, p).await?.clone(),
                    ClientId::new(p.client_id.clone()),
                    p.client_secret.clone().map(ClientSecret::new),
                )
                .set_redirect_uri(self.callback_url(p)?);
                let token =
                    client.exchange_code(code).map_err(|e| refused(&e))?.set_pkce_verifier(verifier).request_async(http).await.map_err(|e| refused(&e))?;
                let id_token = token.id_token().ok_or_else(|| refused(&"the token response has no ID token"))?;
                let claims = id_token.claims(&client.id_token_verifier(), &Nonce::new(pending.nonce.clone())).map_err(|e| refused(&e))?;
                let mut profile = serde_json::to_value(claims).map_err(|e| refused(&e))?;
                // Claims the ID token leaves out (email, often) come from the userinfo endpoint.
                if (profile.get(&p.email_key).is_none() || profile.get(&p.identifier_key).is_none())
                    && let Ok(request) = client.user_info(token.access_token().clone(), None)
                {
                    let info: openidconnect::core::CoreUserInfoClaims = request.request_async(http).await.map_err(|e| refused(&e))?;
                    if let (Ok(serde_json::Value::Object(extra)), Some(obj)) = (serde_json::to_value(info), profile.as_object_mut()) {
                        for (k, v) in extra {
                            obj.entry(k).or_insert(v);
                        }
                    }
                }
                profile
            }
            Driver::OAuth2 => {
                let token = self.oauth2_client(p)?.exchange_code(code).set_pkce_verifier(verifier).request_async(http).await.map_err(|e| refused(&e))?;
                self.fetch_profile(p, token.access_token()).await?
            }
        };
        let text = |key: &str| match profile.get(key) {
            Some(serde_json::Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(serde_json::Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let identifier = text(&p.identifier_key).ok_or_else(|| refused(&format!("the profile has no {:?}", p.identifier_key)))?;
        // OpenID Connect's standard claim; some providers send it as a string.
        let email_verified = matches!(profile.get("email_verified"), Some(serde_json::Value::Bool(true)))
            || matches!(profile.get("email_verified"), Some(serde_json::Value::String(s)) if s == "true");
        Ok(AtProvider { identifier, email: text(&p.email_key), email_verified })
    }

    async fn fetch_profile(&self, p: &ProviderSettings, token: &AccessToken) -> Result<serde_json::Value, ApiError> {
        let url = p.profile_url.clone().unwrap_or_default();
        let res = self
            .providers
            .http
            .0
            .get(url)
            .bearer_auth(token.secret())
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| provider_error(&p.name, &e))?;
        if !res.status().is_success() {
            return Err(provider_error(&p.name, &format!("profile URL answered {}", res.status())));
        }
        res.json().await.map_err(|e| provider_error(&p.name, &e))
    }

    /// The user for `who` at provider `p`: linked, pre-created (linked now, if the email is
    /// verified or the provider is trusted without) or registered. Errors: INVALID_CREDENTIALS
    /// (unknown and no registration, unverified email of a pre-created user, inactive).
    async fn sso_user(&self, p: &ProviderSettings, who: &AtProvider) -> Result<Identity, ApiError> {
        let db = crate::db_error;
        let identifier = who.identifier.as_str();
        if let Some(u) = users::by_external(&self.pool, &p.name, identifier).await.map_err(db)? {
            return Some(u).filter(Identity::is_active).ok_or_else(ApiError::invalid_credentials);
        }
        let email = who.email.as_deref().unwrap_or(identifier);
        let may_link = who.email_verified || !p.require_verified_email;
        if !may_link {
            // Not linked by an address the provider has not verified; a registration below
            // cannot take the address either (it is unique).
            tracing::info!(provider = %p.name, "SSO login with an unverified email: no pre-created user is linked by it");
        }
        let linked = users::link_external(&self.pool, &p.name, email, identifier, may_link).await.map_err(db)?;
        if linked.is_none() {
            if !p.allow_registration {
                tracing::info!(provider = %p.name, "SSO login of an unknown user, and public registration is off");
                return Err(ApiError::invalid_credentials());
            }
            users::create_external(&self.pool, &p.name, email, identifier, p.default_role.as_deref()).await.map_err(|e| {
                // The email belongs to another user already (who signs in otherwise).
                tracing::warn!(provider = %p.name, error = %e, "registering an SSO user failed");
                ApiError::invalid_credentials()
            })?;
        }
        users::by_external(&self.pool, &p.name, identifier).await.map_err(db)?.filter(Identity::is_active).ok_or_else(ApiError::invalid_credentials)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn redirect_allow_list_compares_origin_and_path() {
        let allow = vec!["https://app.example.com/done".to_string()];
        assert!(super::url_allowed("https://app.example.com/done", &allow));
        assert!(super::url_allowed("https://app.example.com/done/?x=1", &allow));
        assert!(!super::url_allowed("https://app.example.com/other", &allow));
        assert!(!super::url_allowed("https://evil.example.com/done", &allow));
        assert!(!super::url_allowed("http://app.example.com/done", &allow));
        assert!(!super::url_allowed("not a url", &allow));
    }
}
