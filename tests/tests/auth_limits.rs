//! Authentication under time and failure: token expiry with short TTLs, rate limits tripping
//! and recovering, Redis going away, and signing-key rotation without downtime. Each test runs
//! its own environment (their settings differ), with its own Redis where it stops it.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::*;
use reqwest::Method;
use serde_json::json;
use std::time::Duration;

const ADMIN_EMAIL: &str = "admin@example.com";
const ADMIN_PASSWORD: &str = "test-password";

fn env(name: &str, auth_env: &[(&str, &str)], edge_env: &[(&str, &str)], own_redis: bool, mail: bool) -> TestApp {
    let pairs = |v: &[(&str, &str)]| v.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    start(Spec {
        name: Some(name.into()),
        auth_env: pairs(auth_env),
        edge_env: pairs(&[&[("IP_TRUSTED_PROXIES", "127.0.0.1")], edge_env].concat()),
        own_redis,
        mail,
        ..Spec::default()
    })
    .expect("test environment")
}

async fn login(app: &TestApp, mode: &str, from: &str) -> Reply {
    post_json(app, "/auth/login", json!({"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD, "mode": mode}), &[("x-forwarded-for", from)]).await
}

async fn read_with(app: &TestApp, headers: &[(&str, &str)]) -> Reply {
    send(app, Method::GET, "/items/articles?limit=1", None, headers, None).await
}

fn data_str(r: &Reply, key: &str) -> String {
    r.body["data"][key].as_str().unwrap_or_else(|| panic!("no data.{key} in {}", r.body)).to_owned()
}

#[tokio::test]
async fn tokens_expire() {
    let app = env("expiry", &[("ACCESS_TOKEN_TTL", "2s"), ("SESSION_COOKIE_TTL", "2s"), ("PASSWORD_RESET_TOKEN_TTL", "2s")], &[], false, true);
    let r = login(&app, "json", "10.9.0.1").await;
    assert_eq!(r.body["data"]["expires"], 2000, "{}", r.body);
    let access = data_str(&r, "access_token");
    let refresh = data_str(&r, "refresh_token");
    let s = login(&app, "session", "10.9.0.1").await;
    let session = cookie_value(&s, "directus_session_token").expect("session cookie");
    let jar = format!("directus_session_token={session}");
    assert_eq!(read_with(&app, &[("authorization", &format!("Bearer {access}"))]).await.status, 200);
    assert_eq!(read_with(&app, &[("cookie", &jar)]).await.status, 200);
    assert_eq!(post_json(&app, "/auth/password/request", json!({"email": ADMIN_EMAIL}), &[]).await.status, 204);
    let mail = wait_mail(&app, ADMIN_EMAIL, 15).await.expect("reset mail");
    let token = mail["body"].as_str().and_then(|b| b.split("token=").nth(1)).and_then(|t| t.split_whitespace().next()).expect("token").to_owned();

    tokio::time::sleep(Duration::from_millis(3100)).await;
    let r = read_with(&app, &[("authorization", &format!("Bearer {access}"))]).await;
    assert_error(&r, 401, "TOKEN_EXPIRED", "expired access token");
    let r = read_with(&app, &[("cookie", &jar)]).await;
    assert_error(&r, 401, "TOKEN_EXPIRED", "expired session token");
    // a session token cannot be refreshed after it expired (docs/authentication.md)
    let r = post_json(&app, "/auth/refresh", json!({"mode": "session"}), &[("cookie", &jar)]).await;
    assert_error(&r, 401, "TOKEN_EXPIRED", "refresh with an expired session token");
    // the refresh token lives on (7 days) and gives a fresh access token
    let r = post_json(&app, "/auth/refresh", json!({"refresh_token": refresh}), &[]).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(read_with(&app, &[("authorization", &format!("Bearer {}", data_str(&r, "access_token")))]).await.status, 200);
    let r = post_json(&app, "/auth/password/reset", json!({"token": token, "password": "a-new-password"}), &[]).await;
    assert_error(&r, 403, "FORBIDDEN", "expired reset token");
}

#[tokio::test]
async fn attempt_and_request_limits_trip_and_recover() {
    let app = env(
        "limits",
        &[("AUTH_RATE_LIMIT_POINTS", "3"), ("AUTH_RATE_LIMIT_DURATION", "3s")],
        &[("RATE_LIMITER_ENABLED", "true"), ("RATE_LIMITER_POINTS", "20"), ("RATE_LIMITER_DURATION", "2")],
        false,
        false,
    );
    // Per account and address, always on: 3 attempts, then 429 until one refills (1 s).
    let wrong = || post_json(&app, "/auth/login", json!({"email": ADMIN_EMAIL, "password": "wrong"}), &[("x-forwarded-for", "10.8.0.1")]);
    for _ in 0..3 {
        assert_error(&wrong().await, 401, "INVALID_CREDENTIALS", "within the limit");
    }
    let r = wrong().await;
    assert_error(&r, 429, "REQUESTS_EXCEEDED", "fourth attempt");
    assert_eq!(r.body["errors"][0]["extensions"]["limit"], 3);
    assert!(r.body["errors"][0]["extensions"]["reset"].is_string(), "{}", r.body);
    let retry: u64 = r.headers.get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok()).expect("Retry-After");
    assert!((1..=3).contains(&retry), "Retry-After {retry}");
    // another address, or another account, is not affected
    let other = post_json(&app, "/auth/login", json!({"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}), &[("x-forwarded-for", "10.8.0.2")]).await;
    assert_eq!(other.status, 200, "{}", other.body);
    tokio::time::sleep(Duration::from_secs(retry)).await;
    let ok = post_json(&app, "/auth/login", json!({"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}), &[("x-forwarded-for", "10.8.0.1")]).await;
    assert_eq!(ok.status, 200, "recovered: {}", ok.body);
    // Password-reset requests count too.
    for _ in 0..3 {
        let r = post_json(&app, "/auth/password/request", json!({"email": "x@example.com"}), &[("x-forwarded-for", "10.8.0.3")]).await;
        assert_eq!(r.status, 204);
    }
    let r = post_json(&app, "/auth/password/request", json!({"email": "x@example.com"}), &[("x-forwarded-for", "10.8.0.3")]).await;
    assert_error(&r, 429, "REQUESTS_EXCEEDED", "reset requests");

    // Per address on the edge (RATE_LIMITER_*): 20 at once, refilled over 2 s.
    let app = &app;
    let ping = |ip: &'static str| async move { send(app, Method::GET, "/server/ping", None, &[("x-forwarded-for", ip)], None).await };
    let replies = futures_util::future::join_all((0..30).map(|_| ping("10.7.0.1"))).await;
    let limited: Vec<&Reply> = replies.iter().filter(|r| r.status == 429).collect();
    assert!(!limited.is_empty() && limited.len() <= 10, "{} of 30 limited", limited.len());
    assert_error(limited[0], 429, "REQUESTS_EXCEEDED", "edge limit");
    assert!(limited[0].headers.get("retry-after").is_some());
    assert_eq!(ping("10.7.0.2").await.status, 200, "another address");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(ping("10.7.0.1").await.status, 200, "recovered");
}

/// The per-address limits count an IPv6 client by its /64 network (docs/security.md "Client
/// addresses and what the ports trust"): a client moving through the addresses of its /64 gets
/// no more sign-in attempts or requests than one address does; another /64 is another client.
#[tokio::test]
async fn an_ipv6_network_counts_as_one_client_address() {
    let app = env(
        "limits_v6",
        &[("AUTH_RATE_LIMIT_POINTS", "3"), ("AUTH_RATE_LIMIT_DURATION", "60s")],
        &[("RATE_LIMITER_ENABLED", "true"), ("RATE_LIMITER_POINTS", "20"), ("RATE_LIMITER_DURATION", "60")],
        false,
        false,
    );
    let app = &app;
    let attempt = |password: &'static str, from: String| async move {
        post_json(app, "/auth/login", json!({"email": ADMIN_EMAIL, "password": password}), &[("x-forwarded-for", from.as_str())]).await
    };
    for i in 1..=3 {
        assert_error(&attempt("wrong", format!("2001:db8:6:6::{i}")).await, 401, "INVALID_CREDENTIALS", "within the limit");
    }
    let r = attempt("wrong", "2001:db8:6:6:ffff:1:2:3".into()).await;
    assert_error(&r, 429, "REQUESTS_EXCEEDED", "a fourth attempt from another address of the same /64");
    let r = attempt(ADMIN_PASSWORD, "2001:db8:6:7::1".into()).await;
    assert_eq!(r.status, 200, "another /64: {}", r.body);

    let ping = |from: String| async move { send(app, Method::GET, "/server/ping", None, &[("x-forwarded-for", from.as_str())], None).await.status };
    let mut limited = 0;
    for i in 1..=30 {
        if ping(format!("2001:db8:7:7::{i:x}")).await == 429 {
            limited += 1;
        }
    }
    assert!(limited >= 5, "RATE_LIMITER_* counted each address of one /64 apart: {limited} of 30 limited");
    assert_eq!(ping("2001:db8:7:8::1".into()).await, 200, "another /64");
}

#[tokio::test]
async fn without_redis_auth_answers_503_and_reads_go_on() {
    let mut app = env("noredis", &[], &[], true, false);
    let r = login(&app, "json", "10.6.0.1").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let access = data_str(&r, "access_token");
    let refresh = data_str(&r, "refresh_token");
    let s = login(&app, "session", "10.6.0.1").await;
    let jar = format!("directus_session_token={}", cookie_value(&s, "directus_session_token").expect("cookie"));
    app.stop_redis().expect("stop redis");

    let r = read_with(&app, &[("authorization", &format!("Bearer {access}"))]).await;
    assert_eq!(r.status, 200, "item reads with a JWT need no Redis: {}", r.body);
    let r = read_with(&app, &[("authorization", &format!("Bearer {}", ADMIN_TOKEN))]).await;
    assert_eq!(r.status, 200, "nor with a static token");
    assert_error(&login(&app, "json", "10.6.0.1").await, 503, "SERVICE_UNAVAILABLE", "login");
    let r = post_json(&app, "/auth/refresh", json!({"refresh_token": refresh}), &[]).await;
    assert_error(&r, 503, "SERVICE_UNAVAILABLE", "refresh");
    let r = post_json(&app, "/auth/logout", json!({"refresh_token": refresh}), &[]).await;
    assert_error(&r, 503, "SERVICE_UNAVAILABLE", "logout");
    let r = read_with(&app, &[("cookie", &jar)]).await;
    assert_error(&r, 503, "SERVICE_UNAVAILABLE", "a session token must be checked in Redis");
}

#[tokio::test]
async fn without_auth_service_token_reads_go_on_and_logins_answer_503() {
    let mut app = env("noauth", &[], &[], false, false);
    let r = login(&app, "json", "10.6.1.1").await;
    let access = data_str(&r, "access_token");
    // The edge knows the signing keys from a first verification.
    assert_eq!(read_with(&app, &[("authorization", &format!("Bearer {access}"))]).await.status, 200);
    app.stop_auth().expect("stop auth-service");
    let r = read_with(&app, &[("authorization", &format!("Bearer {access}"))]).await;
    assert_eq!(r.status, 200, "a JWT is verified with the keys already known: {}", r.body);
    assert_eq!(read_with(&app, &[("authorization", &format!("Bearer {ADMIN_TOKEN}"))]).await.status, 200, "a static token needs no auth-service");
    let started = std::time::Instant::now();
    let r = login(&app, "json", "10.6.1.1").await;
    assert_error(&r, 503, "SERVICE_UNAVAILABLE", "login without auth-service");
    assert!(started.elapsed() < Duration::from_secs(5), "refused quickly, not hung: {:?}", started.elapsed());
}

#[tokio::test]
async fn signing_keys_rotate_without_downtime() {
    let mut app = env("rotation", &[], &[], false, false);
    let keys = app.keys_file();
    let old = login(&app, "json", "10.5.0.1").await;
    let old_token = data_str(&old, "access_token");
    assert_eq!(read_with(&app, &[("authorization", &format!("Bearer {old_token}"))]).await.status, 200);

    // 1. append a new key: published, not yet signing
    let bins = std::env::current_exe().expect("exe").parent().and_then(|d| d.parent()).expect("target dir").to_path_buf();
    let out = std::process::Command::new(bins.join("auth-service")).arg("keygen").output().expect("keygen");
    let new_kid = String::from_utf8_lossy(&out.stderr).trim().trim_start_matches("key id: ").to_owned();
    let mut pem = std::fs::read_to_string(&keys).expect("keys");
    pem.push_str(&String::from_utf8_lossy(&out.stdout));
    std::fs::write(&keys, pem).expect("write keys");
    app.restart_auth(&[]).expect("restart 1");
    let r = login(&app, "json", "10.5.0.1").await;
    assert_eq!(r.status, 200, "{}", r.body);

    // 2. sign with the new key: the core has never seen it and learns it by itself
    app.restart_auth(&[("AUTH_SIGNING_KID", new_kid.as_str())]).expect("restart 2");
    let r = login(&app, "json", "10.5.0.1").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let new_token = data_str(&r, "access_token");
    let header = new_token.split('.').next().expect("header");
    assert_ne!(header, old_token.split('.').next().expect("header"), "another kid");
    assert_eq!(read_with(&app, &[("authorization", &format!("Bearer {new_token}"))]).await.status, 200, "new key");
    assert_eq!(read_with(&app, &[("authorization", &format!("Bearer {old_token}"))]).await.status, 200, "old key still verifies");
}

/// The settings' `auth_login_attempts` (Directus's account lockout): the attempt past the limit
/// suspends the account, whatever password it brings; a success resets the count; an admin
/// re-activates the account; empty means unlimited.
#[tokio::test]
async fn failed_sign_ins_past_the_setting_suspend_the_account() {
    // The attempt limits (per account 20 a window by default) stay out of the way here.
    let app = env("lockout", &[("AUTH_RATE_LIMIT_ACCOUNT_POINTS", "100")], &[], false, false);
    let r = app.admin(Method::PATCH, "/settings", json!({"auth_login_attempts": 3})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.admin(Method::POST, "/users", json!({"email": "locked@example.com", "password": "right-password"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.body["data"]["id"].as_str().expect("id").to_owned();
    let attempt = |password: &'static str, from: &'static str| {
        let app = &app;
        async move { post_json(app, "/auth/login", json!({"email": "locked@example.com", "password": password}), &[("x-forwarded-for", from)]).await.status }
    };
    let status_sql = format!("SELECT to_json(status)::text FROM cdapi.users WHERE id = '{id}'");
    let status = || app.sql(&status_sql);
    for _ in 0..3 {
        assert_eq!(attempt("wrong-password", "10.7.0.1").await, 401);
    }
    assert_eq!(status().await, json!("active"), "three failures are within the limit");
    assert_eq!(attempt("right-password", "10.7.0.2").await, 401, "the fourth attempt is refused even with the right password");
    assert_eq!(status().await, json!("suspended"));
    assert_eq!(attempt("right-password", "10.7.0.2").await, 401, "a suspended account stays shut");

    let r = app.admin(Method::PATCH, &format!("/users/{id}"), json!({"status": "active"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(attempt("right-password", "10.7.0.3").await, 200, "re-activated with a fresh count");
    for _ in 0..3 {
        assert_eq!(attempt("wrong-password", "10.7.0.4").await, 401);
    }
    assert_eq!(attempt("right-password", "10.7.0.4").await, 401, "past the limit again");
    assert_eq!(status().await, json!("suspended"));

    // A success resets the count; no setting, no lockout.
    app.admin(Method::PATCH, &format!("/users/{id}"), json!({"status": "active"})).await;
    for from in ["10.7.0.5", "10.7.0.6"] {
        for _ in 0..2 {
            assert_eq!(attempt("wrong-password", from).await, 401);
        }
        assert_eq!(attempt("right-password", from).await, 200);
    }
    app.admin(Method::PATCH, "/settings", json!({"auth_login_attempts": null})).await;
    for _ in 0..5 {
        assert_eq!(attempt("wrong-password", "10.7.0.7").await, 401);
    }
    assert_eq!(attempt("right-password", "10.7.0.7").await, 200);
    assert_eq!(status().await, json!("active"));
}
