//! Trust, the auth side (docs/security.md): sessions end when a password, email, status or role changes
//! (finding 5); auth-service cannot be exhausted by new emails, many addresses, huge inputs or
//! argon2 floods (finding 6); SSO links an existing user by email only when the provider says
//! the email is verified (finding 10). Each test runs its own environment (their settings
//! differ).

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::*;
use reqwest::Method;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const ADMIN_EMAIL: &str = "admin@example.com";
const ADMIN_PASSWORD: &str = "test-password";

fn env(name: &str, auth_env: &[(&str, &str)], replicas: usize) -> TestApp {
    let pairs = |v: &[(&str, &str)]| v.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    start(Spec { name: Some(name.into()), auth_env: pairs(auth_env), edge_env: pairs(&[("IP_TRUSTED_PROXIES", "127.0.0.1")]), replicas, ..Spec::default() })
        .expect("test environment")
}

async fn login_as(app: &TestApp, email: &str, password: &str, from: &str) -> Reply {
    post_json(app, "/auth/login", json!({"email": email, "password": password}), &[("x-forwarded-for", from)]).await
}

async fn refresh(app: &TestApp, token: &str) -> Reply {
    post_json(app, "/auth/refresh", json!({"refresh_token": token}), &[]).await
}

fn data_str(r: &Reply, key: &str) -> String {
    r.body["data"][key].as_str().unwrap_or_else(|| panic!("no data.{key} in {}", r.body)).to_owned()
}

fn retry_after(r: &Reply) -> u64 {
    r.headers.get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no Retry-After: {:?}", r.headers))
}

// ---- finding 5: sessions end with a password, email, status or role change ----

#[tokio::test]
async fn tokens_carry_their_session_family() {
    let app = env("trust_family", &[], 1);
    let first = login_as(&app, ADMIN_EMAIL, ADMIN_PASSWORD, "10.20.0.1").await;
    assert_eq!(first.status, 200, "{}", first.body);
    let family = jwt_claims(&data_str(&first, "access_token"))["family"].as_str().map(str::to_owned).expect("a family claim");
    let next = refresh(&app, &data_str(&first, "refresh_token")).await;
    assert_eq!(next.status, 200, "{}", next.body);
    assert_eq!(jwt_claims(&data_str(&next, "access_token"))["family"], json!(family), "a refresh stays in its login's family");
    let other = login_as(&app, ADMIN_EMAIL, ADMIN_PASSWORD, "10.20.0.1").await;
    assert_ne!(jwt_claims(&data_str(&other, "access_token"))["family"], json!(family), "another login, another family");
    let s = post_json(&app, "/auth/login", json!({"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD, "mode": "session"}), &[]).await;
    let session = cookie_value(&s, "directus_session_token").expect("session cookie");
    assert!(jwt_claims(&session)["family"].is_string(), "session tokens name their family too");
}

#[tokio::test]
async fn refresh_of_an_inactive_or_deleted_user_fails() {
    let app = env("trust_inactive", &[], 1);
    let id = create_user(&app, "inactive@example.com", "inactive-password").await;
    let r = login_as(&app, "inactive@example.com", "inactive-password", "10.21.0.1").await;
    assert_eq!(r.status, 200, "{}", r.body);
    exec(&app, &format!("UPDATE cdapi.users SET status = 'suspended' WHERE id = '{id}'")).await;
    assert_error(&refresh(&app, &data_str(&r, "refresh_token")).await, 401, "INVALID_CREDENTIALS", "suspended user");
    exec(&app, &format!("UPDATE cdapi.users SET status = 'active' WHERE id = '{id}'")).await;
    let r = login_as(&app, "inactive@example.com", "inactive-password", "10.21.0.1").await;
    exec(&app, &format!("DELETE FROM cdapi.users WHERE id = '{id}'")).await;
    assert_error(&refresh(&app, &data_str(&r, "refresh_token")).await, 401, "INVALID_CREDENTIALS", "deleted user");
}

/// Needs the core side too (core-service ends the sessions when it writes the user).
#[tokio::test]
async fn changing_the_password_ends_other_sessions() {
    let app = env("trust_sessions", &[], 1);
    let first = login_as(&app, ADMIN_EMAIL, ADMIN_PASSWORD, "10.22.0.1").await;
    let second = login_as(&app, ADMIN_EMAIL, ADMIN_PASSWORD, "10.22.0.2").await;
    assert_eq!((first.status, second.status), (200, 200), "{} {}", first.body, second.body);
    let access = data_str(&first, "access_token");
    let r =
        send(&app, Method::PATCH, "/users/me", Some(&access), &[], Some(("application/json", json!({"password": "a-brand-new-password"}).to_string()))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_error(&refresh(&app, &data_str(&second, "refresh_token")).await, 401, "INVALID_CREDENTIALS", "the other session ended");
    let own = refresh(&app, &data_str(&first, "refresh_token")).await;
    assert_eq!(own.status, 200, "the caller's own session goes on: {}", own.body);

    // An admin suspending a user ends the user's sessions: re-activated, the old refresh
    // token stays dead.
    let id = create_user(&app, "suspended@example.com", "suspended-password").await;
    let r = login_as(&app, "suspended@example.com", "suspended-password", "10.22.0.3").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let path = format!("/users/{id}");
    let users = |body: Value| send(&app, Method::PATCH, &path, Some(ADMIN_TOKEN), &[], Some(("application/json", body.to_string())));
    assert_eq!(users(json!({"status": "suspended"})).await.status, 200);
    assert_eq!(users(json!({"status": "active"})).await.status, 200);
    assert_error(&refresh(&app, &data_str(&r, "refresh_token")).await, 401, "INVALID_CREDENTIALS", "suspension ended the session");
}

// ---- finding 6: auth-service cannot be exhausted ----

#[tokio::test]
async fn one_address_cannot_try_many_accounts() {
    let app = env("trust_per_ip", &[("AUTH_RATE_LIMIT_IP_POINTS", "5")], 1);
    for i in 0..5 {
        let r = login_as(&app, &format!("nobody{i}@example.com"), "wrong", "10.23.0.1").await;
        assert_error(&r, 401, "INVALID_CREDENTIALS", "within the per-address budget");
    }
    let r = login_as(&app, "nobody-else@example.com", "wrong", "10.23.0.1").await;
    assert_error(&r, 429, "REQUESTS_EXCEEDED", "a new email per attempt from one address");
    assert!(retry_after(&r) >= 1);
    let r = login_as(&app, ADMIN_EMAIL, ADMIN_PASSWORD, "10.23.0.2").await;
    assert_eq!(r.status, 200, "another address is not affected: {}", r.body);
}

#[tokio::test]
async fn one_account_cannot_be_tried_from_many_addresses() {
    let app = env("trust_per_account", &[("AUTH_RATE_LIMIT_ACCOUNT_POINTS", "4")], 1);
    for i in 0..4 {
        let r = login_as(&app, ADMIN_EMAIL, "wrong", &format!("10.24.0.{i}")).await;
        assert_error(&r, 401, "INVALID_CREDENTIALS", "within the per-account budget");
    }
    let r = login_as(&app, ADMIN_EMAIL, "wrong", "10.24.1.1").await;
    assert_error(&r, 429, "REQUESTS_EXCEEDED", "the same account from a fifth address");
    assert!(retry_after(&r) >= 1);
    let r = login_as(&app, "someone-else@example.com", "wrong", "10.24.1.2").await;
    assert_error(&r, 401, "INVALID_CREDENTIALS", "another account is not affected");
}

#[tokio::test]
async fn replicas_share_the_attempt_counts() {
    let app = env("trust_replicas", &[("AUTH_RATE_LIMIT_POINTS", "3"), ("AUTH_RATE_LIMIT_DURATION", "1m")], 2);
    assert_eq!(app.auth_urls.len(), 2);
    for _ in 0..3 {
        assert_error(&login_as(&app, ADMIN_EMAIL, "wrong", "10.25.0.1").await, 401, "INVALID_CREDENTIALS", "within the limit");
    }
    let r = login_as(&app, ADMIN_EMAIL, "wrong", "10.25.0.1").await;
    assert_error(&r, 429, "REQUESTS_EXCEEDED", "the fourth attempt, whichever replica answers");
}

#[tokio::test]
async fn oversized_inputs_answer_400_before_any_work() {
    let app = env("trust_budgets", &[], 1);
    let huge = format!("{}@example.com", "a".repeat(1_000_000));
    let started = Instant::now();
    let r = login_as(&app, &huge, "whatever", "10.26.0.1").await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "a 1 MB email");
    assert!(started.elapsed() < Duration::from_secs(2), "answered in {:?}", started.elapsed());
    let long_email = format!("{}@example.com", "a".repeat(250));
    assert_error(&login_as(&app, &long_email, "whatever", "10.26.0.1").await, 400, "INVALID_PAYLOAD", "an email over 254 characters");
    assert_error(&login_as(&app, ADMIN_EMAIL, &"p".repeat(5000), "10.26.0.1").await, 400, "INVALID_PAYLOAD", "a 5000-character password");
    let r = post_json(&app, "/auth/login", json!({"email": ADMIN_EMAIL, "password": "x", "otp": "1".repeat(100)}), &[]).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "a 100-character OTP");
    assert_error(&refresh(&app, &"r".repeat(10_000)).await, 400, "INVALID_PAYLOAD", "a 10 kB refresh token");
    let r = post_json(&app, "/auth/password/request", json!({"email": huge}), &[]).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "a reset request for a 1 MB email");
    let r = post_json(&app, "/auth/password/reset", json!({"token": "t".repeat(10_000), "password": "a-new-password"}), &[]).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "a 10 kB reset token");
    // within the budgets, the answers are as before
    assert_error(&login_as(&app, ADMIN_EMAIL, "wrong", "10.26.0.2").await, 401, "INVALID_CREDENTIALS", "ordinary wrong password");
    assert_eq!(login_as(&app, ADMIN_EMAIL, ADMIN_PASSWORD, "10.26.0.2").await.status, 200);
}

#[tokio::test]
async fn argon2_work_is_bounded_and_sheds_load_with_503() {
    let app = env("trust_argon2", &[("PASSWORD_HASH_CONCURRENCY", "1"), ("PASSWORD_HASH_QUEUE_TIMEOUT_MS", "20")], 1);
    let app = &app;
    let replies =
        futures_util::future::join_all((0..12).map(|i| async move { login_as(app, &format!("flood{i}@example.com"), "wrong", &format!("10.27.0.{i}")).await }))
            .await;
    let statuses: Vec<u16> = replies.iter().map(|r| r.status).collect();
    assert!(statuses.iter().all(|s| *s == 401 || *s == 503), "only 401 and the documented 503: {statuses:?}");
    let shed: Vec<&Reply> = replies.iter().filter(|r| r.status == 503).collect();
    assert!(!shed.is_empty(), "one hash at a time with a 20 ms queue: some logins are shed, got {statuses:?}");
    assert_error(shed[0], 503, "SERVICE_UNAVAILABLE", "argon2 queue full");
    assert!(retry_after(shed[0]) >= 1);
    assert!(statuses.contains(&401), "the ones that got a slot are answered: {statuses:?}");
}

// ---- finding 10: SSO links by email only when the provider verified the email ----

/// A minimal OAuth 2.0 provider: `/authorize` sends the browser straight back with a code,
/// `/token` hands out a token, `/me` answers carol's profile with `email_verified` as set.
async fn mock_oauth2_provider(verified: std::sync::Arc<std::sync::atomic::AtomicBool>) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let verified = verified.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                // headers, then the body by Content-Length
                let head_end = loop {
                    let Ok(n) = sock.read(&mut chunk).await else { return };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let length: usize =
                    head.lines().find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0))).unwrap_or(0);
                while buf.len() < head_end + length {
                    let Ok(n) = sock.read(&mut chunk).await else { return };
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let target = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let url = reqwest::Url::parse(&format!("http://x{target}")).expect("target");
                let param = |k: &str| url.query_pairs().find(|(n, _)| n == k).map(|(_, v)| v.into_owned()).unwrap_or_default();
                let (status, headers, body) = match url.path() {
                    "/authorize" => {
                        let mut back = reqwest::Url::parse(&param("redirect_uri")).expect("redirect_uri");
                        back.query_pairs_mut().append_pair("code", "the-code").append_pair("state", &param("state"));
                        ("302 Found", format!("Location: {back}\r\n"), String::new())
                    }
                    "/token" => {
                        ("200 OK", "Content-Type: application/json\r\n".into(), json!({"access_token": "mock-token", "token_type": "bearer"}).to_string())
                    }
                    "/me" => {
                        let v = verified.load(std::sync::atomic::Ordering::SeqCst);
                        (
                            "200 OK",
                            "Content-Type: application/json\r\n".into(),
                            json!({"sub": "carol", "email": "carol@example.com", "email_verified": v}).to_string(),
                        )
                    }
                    _ => ("404 Not Found", String::new(), String::new()),
                };
                let reply = format!("HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
                let _ = sock.write_all(reply.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    port
}

#[tokio::test]
async fn sso_links_an_existing_user_only_with_a_verified_email() {
    let verified = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let provider = format!("http://127.0.0.1:{}", mock_oauth2_provider(verified.clone()).await);
    let app = env(
        "trust_sso",
        &[
            ("AUTH_PROVIDERS", "mock"),
            ("AUTH_MOCK_DRIVER", "oauth2"),
            ("AUTH_MOCK_CLIENT_ID", "cdapi"),
            ("AUTH_MOCK_CLIENT_SECRET", "secret"),
            ("AUTH_MOCK_AUTHORIZE_URL", &format!("{provider}/authorize")),
            ("AUTH_MOCK_ACCESS_URL", &format!("{provider}/token")),
            ("AUTH_MOCK_PROFILE_URL", &format!("{provider}/me")),
            ("AUTH_MOCK_IDENTIFIER_KEY", "sub"),
            ("AUTH_MOCK_REDIRECT_ALLOW_LIST", "http://app.example.com/done"),
        ],
        1,
    );
    exec(&app, "INSERT INTO cdapi.users (email, provider) VALUES ('carol@example.com', 'mock')").await;
    let sign_in = || async {
        let browser = http_client().cookie_store(true).redirect(reqwest::redirect::Policy::none()).build().expect("client");
        let mut url = format!("{}/auth/login/mock?redirect=http://app.example.com/done", app.rest_url);
        for _ in 0..5 {
            let res = browser.get(&url).send().await.expect("GET");
            let location = res.headers().get("location").and_then(|v| v.to_str().ok()).map(str::to_owned).expect("a redirect");
            if location.starts_with("http://app.example.com/") {
                return location;
            }
            url = location;
        }
        panic!("too many redirects");
    };
    let linked = || app.sql("SELECT to_json(external_identifier)::text FROM cdapi.users WHERE email = 'carol@example.com'");
    assert_eq!(sign_in().await, "http://app.example.com/done?reason=INVALID_CREDENTIALS", "an unverified email links nobody");
    assert_eq!(linked().await, Value::Null);
    verified.store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(sign_in().await, "http://app.example.com/done", "a verified email links the pre-created user");
    assert_eq!(linked().await, json!("carol"));
}
