//! Authentication flows: login in each mode, refresh, logout, wrong credentials, tokens that
//! are not ours, the current user (Directus docs "Authentication").

use e2e_tests::differential::{Answer, Auth, Differential, Req};
use reqwest::Method;
use serde_json::json;

fn field(a: &Answer, key: &str) -> String {
    a.json()["data"][key].as_str().unwrap_or_default().to_owned()
}

/// The names of the cookies an answer sets.
fn cookie_names(body_and_headers: &[String]) -> Vec<String> {
    body_and_headers.iter().filter_map(|c| c.split('=').next().map(str::to_owned)).collect()
}

pub async fn run(d: &mut Differential) {
    let login = json!({"email": "admin@example.com", "password": "admin-password"});
    let (o, t) = d.check("login", Req::json(Method::POST, "/auth/login", login.clone())).await;
    let access = Auth::Tokens(field(&o, "access_token"), field(&t, "access_token"));
    let refresh = (field(&o, "refresh_token"), field(&t, "refresh_token"));
    d.check("the access token works", Req::get("/users/me?fields=email,first_name").auth(access.clone())).await;
    d.check("login, email in capitals", Req::json(Method::POST, "/auth/login", json!({"email": "ADMIN@example.com", "password": "admin-password"}))).await;
    d.check("wrong password", Req::json(Method::POST, "/auth/login", json!({"email": "admin@example.com", "password": "nope"}))).await;
    d.check("unknown user", Req::json(Method::POST, "/auth/login", json!({"email": "ghost@example.com", "password": "nope"}))).await;
    d.check("login without password", Req::json(Method::POST, "/auth/login", json!({"email": "admin@example.com"}))).await;
    d.check("login with a bad email", Req::json(Method::POST, "/auth/login", json!({"email": "not-an-email", "password": "x"}))).await;
    d.check(
        "login in session mode",
        Req::json(Method::POST, "/auth/login", json!({"email": "admin@example.com", "password": "admin-password", "mode": "session"})),
    )
    .await;
    let (o, t) = d
        .check(
            "login in cookie mode",
            Req::json(Method::POST, "/auth/login", json!({"email": "admin@example.com", "password": "admin-password", "mode": "cookie"})),
        )
        .await;
    assert_eq!(cookie_names(&o.cookies), cookie_names(&t.cookies), "cookie mode sets the same cookies");
    // Refresh in JSON mode: each side's own refresh token.
    let req = |token: &str| Req::json(Method::POST, "/auth/refresh", json!({"refresh_token": token, "mode": "json"}));
    let (o, t) = d.pair("refresh", req(&refresh.0), req(&refresh.1)).await;
    let next = (field(&o, "refresh_token"), field(&t, "refresh_token"));
    d.pair_deviates("refresh with the used token", "refresh-grace", req(&refresh.0), req(&refresh.1)).await;
    d.check("refresh with a made-up token", req("made-up")).await;
    let out = |token: &str| Req::json(Method::POST, "/auth/logout", json!({"refresh_token": token}));
    d.pair("logout", out(&next.0), out(&next.1)).await;
    d.pair("refresh after logout", req(&next.0), req(&next.1)).await;
    d.check("an unknown static token", Req::get("/items/articles?limit=1").auth(Auth::Tokens("nope".into(), "nope".into()))).await;
    let forged = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpZCI6IjEiLCJpYXQiOjE3MDAwMDAwMDAsImV4cCI6MTcwMDAwMDkwMCwiaXNzIjoiZGlyZWN0dXMifQ.c2lnbmF0dXJl";
    d.check("a forged JWT", Req::get("/items/articles?limit=1").auth(Auth::Tokens(forged.into(), forged.into()))).await;
    d.check("the current user, public", Req::get("/users/me").auth(Auth::Public)).await;
    d.check("password reset of an unknown user", Req::json(Method::POST, "/auth/password/request", json!({"email": "ghost@example.com"}))).await;
    d.check("server ping", Req::get("/server/ping").auth(Auth::Public)).await;
}
