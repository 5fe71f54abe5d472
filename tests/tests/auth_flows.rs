//! Authentication end to end (docs/authentication.md): login in every mode, cookies, refresh rotation with its
//! grace window and reuse detection, logout, password reset by real mail, TOTP, IP allow-lists,
//! token passing and token errors. Real auth-service, Redis and SMTP server (aiosmtpd).

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::*;
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const ADMIN_EMAIL: &str = "admin@example.com";
const ADMIN_PASSWORD: &str = "test-password";

/// This file's environment: mail on, a 2 s grace window, generous attempt limits (the limits
/// have their own test), and 127.0.0.1 as a trusted proxy so tests can act from other
/// addresses with `X-Forwarded-For`.
fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        start(Spec {
            name: Some("auth".into()),
            mail: true,
            auth_env: vec![
                ("REFRESH_TOKEN_GRACE".into(), "2s".into()),
                ("AUTH_RATE_LIMIT_POINTS".into(), "1000".into()),
                ("PASSWORD_RESET_URL_ALLOW_LIST".into(), "http://app.example.com/reset".into()),
            ],
            edge_env: vec![("IP_TRUSTED_PROXIES".into(), "127.0.0.1".into())],
            ..Spec::default()
        })
        .expect("auth test environment")
    })
}

async fn login(app: &TestApp, email: &str, password: &str, mode: &str, from: &str) -> Reply {
    post_json(app, "/auth/login", json!({"email": email, "password": password, "mode": mode}), &[("x-forwarded-for", from)]).await
}

async fn get_with(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> Reply {
    send(app, Method::GET, path, None, headers, None).await
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn data_str(r: &Reply, key: &str) -> String {
    r.body["data"][key].as_str().unwrap_or_else(|| panic!("no data.{key} in {}", r.body)).to_owned()
}

#[tokio::test]
async fn json_mode_login_gives_tokens_that_read_items() {
    let app = env();
    let r = login(app, ADMIN_EMAIL, ADMIN_PASSWORD, "json", "10.0.0.1").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["expires"], 900_000, "ACCESS_TOKEN_TTL 15 min in ms");
    let access = data_str(&r, "access_token");
    assert_eq!(access.split('.').count(), 3, "a JWT");
    assert!(data_str(&r, "refresh_token").len() >= 32);
    assert!(set_cookies(&r).is_empty(), "json mode sets no cookie");
    let items = get_with(app, "/items/articles?limit=2", &[("authorization", &bearer(&access))]).await;
    assert_eq!(items.status, 200, "{}", items.body);
    assert_eq!(items.body["data"].as_array().map(Vec::len), Some(2));
    let q = get_with(app, &format!("/items/articles?limit=1&access_token={access}"), &[]).await;
    assert_eq!(q.status, 200, "query-string token: {}", q.body);
    let both = get_with(app, &format!("/items/articles?limit=1&access_token={access}"), &[("authorization", &bearer(&access))]).await;
    assert_error(&both, 400, "INVALID_PAYLOAD", "header and query token");
    // email is case-insensitive
    let r = login(app, "ADMIN@Example.com", ADMIN_PASSWORD, "json", "10.0.0.1").await;
    assert_eq!(r.status, 200, "{}", r.body);
}

#[tokio::test]
async fn wrong_credentials_look_the_same() {
    let app = env();
    create_user(app, "suspended@example.com", "right-password").await;
    exec(app, "UPDATE cdapi.users SET status = 'suspended' WHERE email = 'suspended@example.com'").await;
    let cases = [(ADMIN_EMAIL, "wrong-password"), ("nobody@example.com", "whatever-password"), ("suspended@example.com", "right-password")];
    let mut messages = Vec::new();
    for (email, password) in cases {
        let r = login(app, email, password, "json", "10.0.0.2").await;
        assert_error(&r, 401, "INVALID_CREDENTIALS", email);
        messages.push(r.body["errors"][0]["message"].clone());
    }
    assert!(messages.windows(2).all(|w| w[0] == w[1]), "same message: {messages:?}");
    let r = post_json(app, "/auth/login", json!({"email": ADMIN_EMAIL}), &[]).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "no password");
    let r = post_json(app, "/auth/login", json!({"email": ADMIN_EMAIL, "password": "x", "mode": "carrier-pigeon"}), &[]).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "bad mode");
    let r = send(app, Method::POST, "/auth/login", None, &[], Some(("text/plain", "email=x".into()))).await;
    assert_error(&r, 415, "UNSUPPORTED_MEDIA_TYPE", "form body");

    // Comparable timing: an unknown email costs a password verification too.
    async fn median_ms(app: &TestApp, email: &str) -> f64 {
        let mut times = Vec::new();
        for _ in 0..7 {
            let t = Instant::now();
            let r = login(app, email, "not-the-password", "json", "10.0.0.3").await;
            assert_eq!(r.status, 401);
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        times.sort_by(f64::total_cmp);
        times[times.len() / 2]
    }
    let known = median_ms(app, ADMIN_EMAIL).await;
    let unknown = median_ms(app, "nobody-at-all@example.com").await;
    assert!(unknown > known * 0.5 && unknown < known * 2.0, "known {known:.1} ms vs unknown {unknown:.1} ms");
}

#[tokio::test]
async fn cookie_mode_refreshes_and_logs_out_with_the_cookie() {
    let app = env();
    let r = login(app, ADMIN_EMAIL, ADMIN_PASSWORD, "cookie", "10.0.0.4").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body["data"].get("refresh_token").is_none(), "no refresh token in the body: {}", r.body);
    assert!(r.body["data"]["access_token"].is_string());
    let cookie = set_cookies(&r).into_iter().find(|c| c.starts_with("directus_refresh_token=")).expect("refresh cookie");
    for attr in ["HttpOnly", "Path=/", "SameSite=Lax", "Max-Age=604800"] {
        assert!(cookie.contains(attr), "{cookie} lacks {attr}");
    }
    let token = cookie_value(&r, "directus_refresh_token").expect("value");
    let jar = format!("directus_refresh_token={token}");
    // refresh with the cookie alone (no body): the mode follows the cookie
    let r2 = send(app, Method::POST, "/auth/refresh", None, &[("cookie", &jar)], None).await;
    assert_eq!(r2.status, 200, "{}", r2.body);
    let rotated = cookie_value(&r2, "directus_refresh_token").expect("rotated cookie");
    assert_ne!(rotated, token);
    let access = data_str(&r2, "access_token");
    assert_eq!(get_with(app, "/items/articles?limit=1", &[("authorization", &bearer(&access))]).await.status, 200);
    // logout with the cookie: 204, both cookies cleared, the session is over
    let out = send(app, Method::POST, "/auth/logout", None, &[("cookie", &format!("directus_refresh_token={rotated}"))], None).await;
    assert_eq!(out.status, 204, "{}", out.body);
    assert_eq!(cookie_value(&out, "directus_refresh_token").as_deref(), Some(""));
    assert_eq!(cookie_value(&out, "directus_session_token").as_deref(), Some(""));
    let again = send(app, Method::POST, "/auth/refresh", None, &[("cookie", &format!("directus_refresh_token={rotated}"))], None).await;
    assert_error(&again, 401, "INVALID_CREDENTIALS", "refresh after logout");
}

#[tokio::test]
async fn session_mode_is_one_cookie_revoked_at_logout() {
    let app = env();
    let r = login(app, ADMIN_EMAIL, ADMIN_PASSWORD, "session", "10.0.0.5").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"].as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()), Some(vec!["expires".to_string()]), "{}", r.body);
    assert_eq!(r.body["data"]["expires"], 86_400_000, "SESSION_COOKIE_TTL 1 day");
    let cookie = set_cookies(&r).into_iter().find(|c| c.starts_with("directus_session_token=")).expect("session cookie");
    assert!(cookie.contains("HttpOnly") && cookie.contains("Max-Age=86400"), "{cookie}");
    let session = cookie_value(&r, "directus_session_token").expect("value");
    let jar = format!("directus_session_token={session}");
    let items = get_with(app, "/items/articles?limit=1", &[("cookie", &jar)]).await;
    assert_eq!(items.status, 200, "the session cookie alone authenticates: {}", items.body);
    // refresh renews the session token
    let r2 = post_json(app, "/auth/refresh", json!({"mode": "session"}), &[("cookie", &jar)]).await;
    assert_eq!(r2.status, 200, "{}", r2.body);
    let renewed = cookie_value(&r2, "directus_session_token").expect("renewed");
    assert_ne!(renewed, session);
    let jar2 = format!("directus_session_token={renewed}");
    assert_eq!(get_with(app, "/items/articles?limit=1", &[("cookie", &jar2)]).await.status, 200);
    // logout ends it at once: the token is still unexpired, but no longer works
    let out = send(app, Method::POST, "/auth/logout", None, &[("cookie", &jar2)], None).await;
    assert_eq!(out.status, 204);
    let after = get_with(app, "/items/articles?limit=1", &[("cookie", &jar2)]).await;
    assert_error(&after, 401, "INVALID_CREDENTIALS", "session token after logout");
    let refresh = post_json(app, "/auth/refresh", json!({"mode": "session"}), &[("cookie", &jar2)]).await;
    assert_error(&refresh, 401, "INVALID_CREDENTIALS", "refresh after logout");
}

#[tokio::test]
async fn refresh_rotates_allows_two_tabs_and_revokes_on_reuse() {
    let app = env();
    let r = login(app, ADMIN_EMAIL, ADMIN_PASSWORD, "json", "10.0.0.6").await;
    let rt1 = data_str(&r, "refresh_token");
    let refresh = |token: String| async move { post_json(app, "/auth/refresh", json!({"refresh_token": token}), &[]).await };
    // two tabs refresh with the same token at the same moment: both succeed
    let (a, b) = tokio::join!(refresh(rt1.clone()), refresh(rt1.clone()));
    assert_eq!((a.status, b.status), (200, 200), "{} / {}", a.body, b.body);
    let (rt2, rt3) = (data_str(&a, "refresh_token"), data_str(&b, "refresh_token"));
    assert!(rt2 != rt1 && rt3 != rt1 && rt2 != rt3, "every refresh issues a new token");
    assert_eq!(a.body["data"]["expires"], 900_000);
    // rt2 is current and refreshes
    let c = refresh(rt2.clone()).await;
    assert_eq!(c.status, 200, "{}", c.body);
    let rt4 = data_str(&c, "refresh_token");
    // after the 2 s grace window, the rotated rt1 is a replay: the whole family is revoked
    tokio::time::sleep(Duration::from_millis(2600)).await;
    let replay = refresh(rt1).await;
    assert_error(&replay, 401, "INVALID_CREDENTIALS", "replayed token");
    for (name, token) in [("rt3", rt3), ("rt4", rt4)] {
        let r = refresh(token).await;
        assert_error(&r, 401, "INVALID_CREDENTIALS", &format!("{name} after reuse detection"));
    }
}

#[tokio::test]
async fn logout_needs_a_token_and_ignores_unknown_ones() {
    let app = env();
    let r = send(app, Method::POST, "/auth/logout", None, &[], None).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "logout without a token");
    let r = post_json(app, "/auth/logout", json!({"refresh_token": "not-a-real-token"}), &[]).await;
    assert_eq!(r.status, 204, "{}", r.body);
    let r = post_json(app, "/auth/refresh", json!({"refresh_token": "not-a-real-token"}), &[]).await;
    assert_error(&r, 401, "INVALID_CREDENTIALS", "unknown refresh token");
    let r = post_json(app, "/auth/refresh", json!({}), &[]).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "refresh without a token");
    // json mode: the body's token
    let r = login(app, ADMIN_EMAIL, ADMIN_PASSWORD, "json", "10.0.0.7").await;
    let rt = data_str(&r, "refresh_token");
    assert_eq!(post_json(app, "/auth/logout", json!({"refresh_token": rt}), &[]).await.status, 204);
    let r = post_json(app, "/auth/refresh", json!({"refresh_token": rt}), &[]).await;
    assert_error(&r, 401, "INVALID_CREDENTIALS", "refresh after logout");
}

#[tokio::test]
async fn tampered_tokens_are_invalid() {
    let app = env();
    let r = login(app, ADMIN_EMAIL, ADMIN_PASSWORD, "json", "10.0.0.8").await;
    let access = data_str(&r, "access_token");
    let parts: Vec<&str> = access.split('.').collect();
    // another payload under the same signature
    let forged = format!("{}.{}.{}", parts[0], "eyJpZCI6IngiLCJhZG1pbl9hY2Nlc3MiOnRydWUsImV4cCI6OTk5OTk5OTk5OX0", parts[2]);
    let r = get_with(app, "/items/articles", &[("authorization", &bearer(&forged))]).await;
    assert_error(&r, 403, "INVALID_TOKEN", "forged payload");
    let mut sig = parts[2].to_owned();
    sig.replace_range(0..2, if sig.starts_with("AA") { "BB" } else { "AA" });
    let r = get_with(app, "/items/articles", &[("authorization", &bearer(&format!("{}.{}.{sig}", parts[0], parts[1])))]).await;
    assert_error(&r, 403, "INVALID_TOKEN", "bad signature");
    let r = get_with(app, "/items/articles", &[("authorization", "Bearer not-a-token-at-all")]).await;
    assert_error(&r, 401, "INVALID_CREDENTIALS", "unknown static token");
}

#[tokio::test]
async fn password_reset_by_mail() {
    let app = env();
    let email = "reset-me@example.com";
    create_user(app, email, "old-password-1").await;
    let r = login(app, email, "old-password-1", "json", "10.0.1.1").await;
    let old_refresh = data_str(&r, "refresh_token");

    // unknown emails get the same 204 and no mail
    let r = post_json(app, "/auth/password/request", json!({"email": "ghost@example.com"}), &[]).await;
    assert_eq!(r.status, 204, "{}", r.body);
    let r = post_json(app, "/auth/password/request", json!({"email": email, "reset_url": "https://evil.example.com/steal"}), &[]).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "reset_url off the allow-list");
    let r = post_json(app, "/auth/password/request", json!({"email": email, "reset_url": "http://app.example.com/reset"}), &[]).await;
    assert_eq!(r.status, 204, "{}", r.body);
    let mail = wait_mail(app, email, 15).await.expect("a reset mail");
    assert_eq!(mail["subject"], "Password Reset Request");
    assert_eq!(mail["from"], "cdapi@example.com");
    let body = mail["body"].as_str().unwrap_or_default();
    let link = body.split_whitespace().find(|w| w.starts_with("http://app.example.com/reset?token=")).expect("link to reset_url");
    let token = link.split("token=").nth(1).expect("token").to_owned();
    assert!(wait_mail(app, "ghost@example.com", 1).await.is_none(), "no mail for an unknown email");

    let r = post_json(app, "/auth/password/reset", json!({"token": token, "password": "short"}), &[]).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "password policy");
    assert_eq!(r.body["errors"][0]["extensions"]["field"], "password");
    let r = post_json(app, "/auth/password/reset", json!({"token": "garbage", "password": "new-password-2"}), &[]).await;
    assert_error(&r, 403, "FORBIDDEN", "garbage token");
    let r = post_json(app, "/auth/password/reset", json!({"token": token, "password": "new-password-2"}), &[]).await;
    assert_eq!(r.status, 204, "{}", r.body);
    let r = post_json(app, "/auth/password/reset", json!({"token": token, "password": "new-password-3"}), &[]).await;
    assert_error(&r, 403, "FORBIDDEN", "reset token used twice");
    // the new password works, the old one does not, and earlier sessions are over
    assert_eq!(login(app, email, "new-password-2", "json", "10.0.1.1").await.status, 200);
    assert_error(&login(app, email, "old-password-1", "json", "10.0.1.1").await, 401, "INVALID_CREDENTIALS", "old password");
    let r = post_json(app, "/auth/refresh", json!({"refresh_token": old_refresh}), &[]).await;
    assert_error(&r, 401, "INVALID_CREDENTIALS", "session from before the reset");
    // a reset token is no access token
    let r = get_with(app, "/items/articles", &[("authorization", &bearer(&token))]).await;
    assert_error(&r, 403, "INVALID_TOKEN", "reset token as access token");
}

#[tokio::test]
async fn default_reset_link_points_at_public_url() {
    let app = env();
    let email = "default-link@example.com";
    create_user(app, email, "some-password-1").await;
    let r = post_json(app, "/auth/password/request", json!({"email": email}), &[]).await;
    assert_eq!(r.status, 204);
    let mail = wait_mail(app, email, 15).await.expect("a reset mail");
    let expected = format!("{}/admin/reset-password?token=", app.rest_url);
    assert!(mail["body"].as_str().is_some_and(|b| b.contains(&expected)), "{}", mail["body"]);
}

/// The TOTP code of `secret` at `t` (seconds).
fn code(secret: &str, t: u64) -> String {
    e2e_tests::totp_code(secret, t)
}

#[tokio::test]
async fn totp_enrol_login_and_disable() {
    let app = env();
    let email = "totp@example.com";
    create_user(app, email, "totp-password-1").await;
    let r = login(app, email, "totp-password-1", "json", "10.0.2.1").await;
    let access = data_str(&r, "access_token");
    let auth = bearer(&access);
    let post = |path: &'static str, body: Value| {
        let auth = auth.clone();
        async move { post_json(app, path, body, &[("authorization", &auth)]).await }
    };
    let r = post("/users/me/tfa/generate", json!({"password": "wrong"})).await;
    assert_error(&r, 401, "INVALID_CREDENTIALS", "generate with a wrong password");
    let r = post("/users/me/tfa/generate", json!({"password": "totp-password-1"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let secret = data_str(&r, "secret");
    assert!(data_str(&r, "otpauth_url").starts_with("otpauth://totp/"), "{}", r.body);
    let r = send(app, Method::POST, "/users/me/tfa/generate", None, &[], Some(("application/json", json!({"password": "x"}).to_string()))).await;
    assert_error(&r, 403, "FORBIDDEN", "generate without a token");

    // Stay clear of a step boundary so "previous, current, next" stay what they are.
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    if now() % 30 > 24 {
        tokio::time::sleep(Duration::from_secs(31 - now() % 30)).await;
    }
    let t = now();
    let r = post("/users/me/tfa/enable", json!({"secret": secret, "otp": "000000"})).await;
    assert_error(&r, 401, "INVALID_OTP", "enable with a wrong code");
    let r = post("/users/me/tfa/enable", json!({"secret": secret, "otp": code(&secret, t - 30)})).await;
    assert_eq!(r.status, 204, "{}", r.body);

    let r = login(app, email, "totp-password-1", "json", "10.0.2.1").await;
    assert_error(&r, 401, "INVALID_OTP", "login without otp");
    let r = post_json(app, "/auth/login", json!({"email": email, "password": "totp-password-1", "otp": "123456"}), &[]).await;
    assert_error(&r, 401, "INVALID_OTP", "login with a wrong otp");
    let r = post_json(app, "/auth/login", json!({"email": email, "password": "totp-password-1", "otp": code(&secret, t)}), &[]).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = post_json(app, "/auth/login", json!({"email": email, "password": "totp-password-1", "otp": code(&secret, t)}), &[]).await;
    assert_error(&r, 401, "INVALID_OTP", "a code is used once");
    let r = post_json(app, "/auth/login", json!({"email": email, "password": "wrong", "otp": code(&secret, t + 30)}), &[]).await;
    assert_error(&r, 401, "INVALID_CREDENTIALS", "the password is checked first");

    let r = post("/users/me/tfa/disable", json!({"otp": "000000"})).await;
    assert_error(&r, 401, "INVALID_OTP", "disable with a wrong code");
    let r = post("/users/me/tfa/disable", json!({"otp": code(&secret, t + 30)})).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(login(app, email, "totp-password-1", "json", "10.0.2.1").await.status, 200, "no otp needed any more");
}

#[tokio::test]
async fn ip_allow_lists_of_user_and_role() {
    let app = env();
    let id = create_user(app, "office@example.com", "office-password-1").await;
    exec(app, &format!("UPDATE cdapi.users SET ip_access = '{{10.20.0.0/16}}', token_hash = encode(sha256('office-static-token'), 'hex') WHERE id = '{id}'"))
        .await;
    let r = login(app, "office@example.com", "office-password-1", "json", "203.0.113.5").await;
    assert_error(&r, 401, "INVALID_IP", "login from outside the allow-list");
    let r = login(app, "office@example.com", "wrong", "json", "203.0.113.5").await;
    assert_error(&r, 401, "INVALID_CREDENTIALS", "a wrong password reveals nothing about the list");
    let r = login(app, "office@example.com", "office-password-1", "json", "10.20.3.4").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let access = data_str(&r, "access_token");
    let rt = data_str(&r, "refresh_token");
    // token use from elsewhere: INVALID_IP (before any permission check)
    for token in [access.as_str(), "office-static-token"] {
        let r = get_with(app, "/items/articles", &[("authorization", &bearer(token)), ("x-forwarded-for", "203.0.113.5")]).await;
        assert_error(&r, 401, "INVALID_IP", "token used from outside");
        let r = get_with(app, "/items/articles", &[("authorization", &bearer(token)), ("x-forwarded-for", "10.20.9.9")]).await;
        assert_error(&r, 403, "FORBIDDEN", "allowed address, no permission yet");
    }
    let r = post_json(app, "/auth/refresh", json!({"refresh_token": rt}), &[("x-forwarded-for", "203.0.113.5")]).await;
    assert_error(&r, 401, "INVALID_IP", "refresh from outside");
    // A static token works where a JWT does (here: the TOTP endpoints, inside the list).
    let r = post_json(
        app,
        "/users/me/tfa/generate",
        json!({"password": "office-password-1"}),
        &[("authorization", "Bearer office-static-token"), ("x-forwarded-for", "10.20.1.1")],
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);

    // The lists of the role's policies apply too (Directus 11: a user whose IP-limited
    // policies all refuse the address is refused).
    let id = create_user(app, "roleip@example.com", "roleip-password-1").await;
    exec(
        app,
        &format!(
            "INSERT INTO cdapi.roles (name) VALUES ('vpn-only'); \
        INSERT INTO cdapi.policies (id, name, ip_access) VALUES ('00000000-0000-4000-8000-0000000000f1', 'vpn-only', '{{192.168.7.0/24}}'); \
        INSERT INTO cdapi.access (role, policy) SELECT id, '00000000-0000-4000-8000-0000000000f1' FROM cdapi.roles WHERE name = 'vpn-only'; \
        UPDATE cdapi.users SET role = (SELECT id FROM cdapi.roles WHERE name = 'vpn-only') WHERE id = '{id}'"
        ),
    )
    .await;
    assert_error(&login(app, "roleip@example.com", "roleip-password-1", "json", "10.1.1.1").await, 401, "INVALID_IP", "role list");
    assert_eq!(login(app, "roleip@example.com", "roleip-password-1", "json", "192.168.7.20").await.status, 200);
}

#[tokio::test]
async fn providers_are_listed() {
    let app = env();
    let r = get_with(app, "/auth", &[]).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body, json!({"data": [], "disableDefault": false}));
    let r = get_with(app, "/auth/login/nope", &[]).await;
    assert_error(&r, 404, "ROUTE_NOT_FOUND", "unknown provider");
}

#[tokio::test]
async fn auth_service_speaks_grpc_to_internal_callers() {
    use cdapi_proto::v1::auth_service_client::AuthServiceClient;
    use cdapi_proto::v1::{GetPublicKeysRequest, LoginRequest, SessionMode};
    let app = env();
    let mut client = AuthServiceClient::connect(app.auth_url.clone()).await.expect("connect");
    let keys = client.get_public_keys(GetPublicKeysRequest {}).await.expect("keys").into_inner();
    assert_eq!(keys.keys.len(), 1);
    assert!(keys.keys[0].signing && keys.keys[0].alg == "EdDSA" && keys.keys[0].public_key.len() == 32);
    let t = client
        .login(LoginRequest { email: ADMIN_EMAIL.into(), password: ADMIN_PASSWORD.into(), otp: None, mode: SessionMode::Json as i32 })
        .await
        .expect("login")
        .into_inner();
    assert_eq!(t.expires_ms, 900_000);
    let err = client.login(LoginRequest { email: ADMIN_EMAIL.into(), password: "nope".into(), otp: None, mode: 0 }).await.expect_err("wrong password");
    assert_eq!(cdapi_proto::ApiError::from_status(&err).code, cdapi_proto::ErrorCode::InvalidCredentials);
    assert_eq!(err.code(), tonic::Code::Unauthenticated);
}
