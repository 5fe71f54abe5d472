//! AuthService: each RPC a thin call into the flows of the other modules.

use crate::Auth;
use access_token::client::Client;
use cdapi_proto::ApiError;
use cdapi_proto::v1::auth_service_server::AuthService;
use cdapi_proto::v1::*;
use std::net::IpAddr;
use std::sync::Arc;
use system_tables::users::Identity;
use tonic::{Request, Response, Status};

/// The AuthService implementation.
pub struct AuthApi {
    auth: Arc<Auth>,
}

impl AuthApi {
    /// Wraps the state.
    pub fn new(auth: Arc<Auth>) -> Self {
        Self { auth }
    }

    /// Refuses a call that needs the database while the readiness check finds it away:
    /// SERVICE_UNAVAILABLE with `retry_after` at once, instead of a wait for a connection.
    fn database_needed(&self) -> Result<(), Status> {
        if self.auth.database_away.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(access_token::authenticate::database_away().to_status());
        }
        Ok(())
    }

    /// The signed-in user of a request (FORBIDDEN without a token).
    async fn user<T>(&self, req: &Request<T>) -> Result<Identity, ApiError> {
        self.auth.authenticator.identify(req.metadata()).await?.ok_or_else(ApiError::forbidden)
    }
}

/// The end client's address (`x-client-ip`, set by the edges or from the TCP peer).
fn ip<T>(req: &Request<T>) -> Option<IpAddr> {
    access_token::ip::client_ip(req.metadata())
}

fn reply<T>(r: Result<T, ApiError>) -> Result<Response<T>, Status> {
    r.map(Response::new).map_err(|e| e.to_status())
}

#[tonic::async_trait]
impl AuthService for AuthApi {
    async fn get_public_keys(&self, _req: Request<GetPublicKeysRequest>) -> Result<Response<PublicKeys>, Status> {
        Ok(Response::new(self.auth.keys.published().clone()))
    }

    async fn login(&self, req: Request<LoginRequest>) -> Result<Response<TokenReply>, Status> {
        self.database_needed()?;
        let (ip, client) = (ip(&req), Client::from_metadata(req.metadata()));
        reply(self.auth.login(req.into_inner(), ip, &client).await)
    }

    async fn refresh(&self, req: Request<RefreshRequest>) -> Result<Response<TokenReply>, Status> {
        self.database_needed()?;
        let ip = ip(&req);
        reply(self.auth.refresh(req.into_inner(), ip).await)
    }

    async fn logout(&self, req: Request<LogoutRequest>) -> Result<Response<AuthAck>, Status> {
        reply(self.auth.logout(req.into_inner()).await.map(|()| AuthAck {}))
    }

    async fn request_password_reset(&self, req: Request<PasswordResetRequest>) -> Result<Response<AuthAck>, Status> {
        self.database_needed()?;
        let ip = ip(&req);
        let r = req.into_inner();
        reply(self.auth.request_reset(r.email, r.reset_url, ip).await.map(|()| AuthAck {}))
    }

    async fn reset_password(&self, req: Request<ResetPasswordRequest>) -> Result<Response<AuthAck>, Status> {
        self.database_needed()?;
        let r = req.into_inner();
        reply(self.auth.reset_password(&r.token, r.password).await.map(|()| AuthAck {}))
    }

    async fn list_providers(&self, _req: Request<ListProvidersRequest>) -> Result<Response<Providers>, Status> {
        Ok(Response::new(Providers { providers: self.auth.providers.listed(), disable_default: self.auth.settings.disable_default }))
    }

    async fn start_sso(&self, req: Request<StartSsoRequest>) -> Result<Response<SsoRedirect>, Status> {
        reply(self.auth.start_sso(req.into_inner()).await)
    }

    async fn finish_sso(&self, req: Request<FinishSsoRequest>) -> Result<Response<SsoResult>, Status> {
        self.database_needed()?;
        let (ip, client) = (ip(&req), Client::from_metadata(req.metadata()));
        reply(self.auth.finish_sso(req.into_inner(), ip, &client).await)
    }

    async fn generate_tfa(&self, req: Request<GenerateTfaRequest>) -> Result<Response<TfaSecret>, Status> {
        self.database_needed()?;
        let r = async {
            let user = self.user(&req).await?;
            self.auth.generate_tfa(&user, req.get_ref().password.clone(), ip(&req)).await
        };
        reply(r.await)
    }

    async fn enable_tfa(&self, req: Request<EnableTfaRequest>) -> Result<Response<AuthAck>, Status> {
        self.database_needed()?;
        let r = async {
            let user = self.user(&req).await?;
            self.auth.enable_tfa(&user, &req.get_ref().secret, &req.get_ref().otp, ip(&req)).await
        };
        reply(r.await.map(|()| AuthAck {}))
    }

    async fn disable_tfa(&self, req: Request<DisableTfaRequest>) -> Result<Response<AuthAck>, Status> {
        self.database_needed()?;
        let r = async {
            let user = self.user(&req).await?;
            self.auth.disable_tfa(&user, &req.get_ref().otp, ip(&req)).await
        };
        reply(r.await.map(|()| AuthAck {}))
    }

    async fn track_page(&self, req: Request<TrackPageRequest>) -> Result<Response<AuthAck>, Status> {
        self.database_needed()?;
        let r = async {
            let user = self.auth.authenticator.identify(req.metadata()).await?.ok_or_else(ApiError::invalid_credentials)?;
            let page = req.get_ref().last_page.as_str();
            if page.is_empty() || page.chars().count() > 255 {
                return Err(ApiError::invalid_payload("\"last_page\" (at most 255 characters) is required"));
            }
            system_tables::users::set_last_page(&self.auth.pool, &user.id, page).await.map_err(access_token::authenticate::db_error)
        };
        reply(r.await.map(|()| AuthAck {}))
    }

    async fn get_current_user(&self, req: Request<GetCurrentUserRequest>) -> Result<Response<CurrentUser>, Status> {
        self.database_needed()?;
        let r = async {
            let who = self.auth.authenticator.authenticate(req.metadata()).await?;
            if who.share.is_some() {
                // A share session is no user: an empty profile (the edges read it as such).
                return Ok(CurrentUser::default());
            }
            let user = who.user.ok_or_else(ApiError::forbidden)?;
            let p =
                system_tables::users::profile(&self.auth.pool, &user).await.map_err(access_token::authenticate::db_error)?.ok_or_else(ApiError::forbidden)?;
            let role = match (p.role_id, p.role_name) {
                (Some(id), Some(name)) => {
                    Some(UserRole { id, name, admin_access: p.role_admin_access.unwrap_or(false), app_access: p.role_app_access.unwrap_or(false) })
                }
                _ => None,
            };
            Ok(CurrentUser {
                id: p.id,
                email: p.email,
                first_name: p.first_name,
                last_name: p.last_name,
                status: p.status,
                role,
                provider: p.provider,
                tfa_enabled: p.tfa_enabled,
                last_access: p.last_access,
            })
        };
        reply(r.await)
    }

    async fn share_login(&self, req: Request<ShareLoginRequest>) -> Result<Response<TokenReply>, Status> {
        self.database_needed()?;
        let ip = ip(&req);
        reply(self.auth.share_login(req.into_inner(), ip).await)
    }

    async fn share_info(&self, req: Request<ShareInfoRequest>) -> Result<Response<ShareInfoReply>, Status> {
        self.database_needed()?;
        reply(self.auth.share_info(&req.get_ref().share).await)
    }

    async fn invite_to_share(&self, req: Request<ShareInviteRequest>) -> Result<Response<AuthAck>, Status> {
        self.database_needed()?;
        let r = async {
            let user = self.user(&req).await?;
            let r = req.get_ref();
            self.auth.share_invitation(&user, &r.share, &r.emails, ip(&req)).await
        };
        let invitation = r.await.map_err(|e| e.to_status())?;
        let auth = self.auth.clone();
        tokio::spawn(async move { auth.send_invitation(invitation).await });
        Ok(Response::new(AuthAck {}))
    }

    async fn generate_hash(&self, req: Request<HashRequest>) -> Result<Response<HashReply>, Status> {
        let s = &self.auth.settings;
        reply(crate::passwords::generate(&s.hasher, &s.password_policy, req.into_inner()).await)
    }

    async fn verify_hash(&self, req: Request<HashRequest>) -> Result<Response<HashReply>, Status> {
        let s = &self.auth.settings;
        reply(crate::passwords::verify(&s.hasher, &s.password_policy, req.into_inner()).await)
    }
}
