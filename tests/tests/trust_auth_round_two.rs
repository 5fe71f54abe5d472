//! Trust, round two, from the attacker's side: sign-in inputs and payloads carrying a NUL
//! character (which PostgreSQL refuses in text) answered 500 instead of 400, the password
//! policy accepted a password of NUL characters, and TOTP could be switched on with an access
//! token alone and a secret of the attacker's choosing. Each test failed on the code before its
//! fix (docs/security.md "Sessions", "Invalid text").

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::{ADMIN_TOKEN, Dataset, Reply, TestApp, app, assert_error, noise, post_json, totp_code, upload_file};
use reqwest::Method;
use serde_json::{Value, json};

/// A new active user with a password; returns its id.
async fn user(app: &TestApp, email: &str, password: &str) -> String {
    let r = app.admin(Method::POST, "/users", json!({"email": email, "password": password})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["data"]["id"].as_str().expect("user id").to_owned()
}

async fn login(app: &TestApp, email: &str, password: &str) -> Reply {
    post_json(app, "/auth/login", json!({"email": email, "password": password}), &[]).await
}

/// The access token of a successful sign-in.
async fn access_token(app: &TestApp, email: &str, password: &str) -> String {
    let r = login(app, email, password).await;
    assert_eq!(r.status, 200, "sign-in of {email}: {}", r.body);
    r.body["data"]["access_token"].as_str().expect("access token").to_owned()
}

/// The code of a GraphQL reply's first error.
fn gql_code(r: &Reply) -> Value {
    r.body["errors"][0]["extensions"]["code"].clone()
}

/// Finding 12: a NUL character in a sign-in's email (REST `/auth/login`, GraphQL
/// `auth_login`), a reset request's email or any text of a payload reached PostgreSQL, which
/// refuses it: a 500 (or a logged database error). It is INVALID_PAYLOAD before any database
/// work; and a password of NUL characters no longer passes the password policy.
#[tokio::test]
async fn a_nul_character_is_a_bad_request_never_a_server_error() {
    let app = app(Dataset::DemoWrites);
    let email = "nul-victim@example.com";
    let id = user(app, email, "nul-password-1").await;
    for (what, body) in [
        ("email", json!({"email": "nul-victim\u{0}@example.com", "password": "nul-password-1"})),
        ("password", json!({"email": email, "password": "nul-password-1\u{0}"})),
        ("otp", json!({"email": email, "password": "nul-password-1", "otp": "12\u{0}456"})),
    ] {
        let r = post_json(app, "/auth/login", body, &[]).await;
        assert_error(&r, 400, "INVALID_PAYLOAD", &format!("a NUL in the sign-in's {what}"));
    }
    let q = "mutation($e: String!, $p: String!) { auth_login(email: $e, password: $p) { access_token } }";
    let r = app.graphql("/graphql/system", None, q, json!({"e": "nul-victim\u{0}@example.com", "p": "x-password-1"})).await;
    assert_eq!(gql_code(&r), json!("INVALID_PAYLOAD"), "GraphQL auth_login: {}", r.body);
    let r = post_json(app, "/auth/password/request", json!({"email": "nul-victim\u{0}@example.com"}), &[]).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "a NUL in a reset request's email");
    let r = post_json(app, "/auth/refresh", json!({"refresh_token": "abc\u{0}def", "mode": "json"}), &[]).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "a NUL in a refresh token");

    // Payloads: text, JSON and CSV values of items and system items.
    let r = app.admin(Method::POST, "/items/articles", json!({"title": "a\u{0}b"})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "a NUL in an item's text");
    let r = app.admin(Method::PATCH, &format!("/users/{id}"), json!({"first_name": "\u{0}"})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "a NUL in a user's name");
    let (status, body) = upload_file(app, Some(ADMIN_TOKEN), &[], "nul.bin", "application/octet-stream", noise(100, 1201)).await;
    assert_eq!(status, 200, "{body}");
    let file = body["data"]["id"].as_str().expect("file id").to_owned();
    for (what, patch) in
        [("JSON", json!({"metadata": {"k": "v\u{0}"}})), ("JSON key", json!({"metadata": {"k\u{0}": 1}})), ("CSV", json!({"tags": ["a\u{0}"]}))]
    {
        let r = app.admin(Method::PATCH, &format!("/files/{file}"), patch).await;
        assert_error(&r, 400, "INVALID_PAYLOAD", &format!("a NUL in a {what} value"));
    }
    let q = "mutation($d: create_articles_input!) { create_articles_item(data: $d) { id } }";
    let r = app.graphql("/graphql", Some(ADMIN_TOKEN), q, json!({"d": {"title": "x\u{0}"}})).await;
    assert_eq!(gql_code(&r), json!("INVALID_PAYLOAD"), "GraphQL create: {}", r.body);

    // The password policy: eight NUL characters are not a password.
    let token = access_token(app, email, "nul-password-1").await;
    let r = app.as_token(Some(&token), Method::PATCH, "/users/me", Some(json!({"password": "\u{0}".repeat(8)}))).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "a password of NUL characters");
    let r = app.admin(Method::POST, "/users", json!({"email": "nul-new@example.com", "password": "abc\u{0}defgh"})).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "a password holding a NUL");
    assert_eq!(login(app, email, "nul-password-1").await.status, 200, "the password is unchanged");
}

/// Seconds since the epoch.
fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Finding 13: with only a stolen access token, `POST /users/me/tfa/enable` with a secret of
/// the attacker's choosing and its code switched TOTP on (no password, no `generate` first),
/// locking the owner out at the next sign-in. Enabling now takes only the secret `generate`
/// made for that user, which needs the password.
#[tokio::test]
async fn a_stolen_access_token_cannot_switch_totp_on() {
    let app = app(Dataset::DemoWrites);
    let email = "totp-victim@example.com";
    user(app, email, "totp-victim-1").await;
    let stolen = access_token(app, email, "totp-victim-1").await;
    let auth = format!("Bearer {stolen}");
    let attackers = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP";
    let r = post_json(app, "/users/me/tfa/enable", json!({"secret": attackers, "otp": totp_code(attackers, now())}), &[("authorization", &auth)]).await;
    assert_eq!(login(app, email, "totp-victim-1").await.status, 200, "the owner still signs in with the password alone");
    assert_error(&r, 400, "INVALID_PAYLOAD", "enabling a secret no `generate` made");

    // `generate` needs the password; without it the thief learns no secret.
    let r = post_json(app, "/users/me/tfa/generate", json!({}), &[("authorization", &auth)]).await;
    assert!(r.status == 400 || r.status == 401, "generate without the password: {} {}", r.status, r.body);
    // The owner generates a secret; the thief's own secret is still refused.
    let owner = format!("Bearer {}", access_token(app, email, "totp-victim-1").await);
    let r = post_json(app, "/users/me/tfa/generate", json!({"password": "totp-victim-1"}), &[("authorization", &owner)]).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let generated = r.body["data"]["secret"].as_str().expect("secret").to_owned();
    let r = post_json(app, "/users/me/tfa/enable", json!({"secret": attackers, "otp": totp_code(attackers, now())}), &[("authorization", &auth)]).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "another secret than the one generated");
    assert_eq!(login(app, email, "totp-victim-1").await.status, 200, "still no TOTP");
    // The generated one, with its code, switches TOTP on (Directus's flow, as the SDK drives it).
    let r = post_json(app, "/users/me/tfa/enable", json!({"secret": generated, "otp": totp_code(&generated, now())}), &[("authorization", &owner)]).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_error(&login(app, email, "totp-victim-1").await, 401, "INVALID_OTP", "TOTP is on");
}
