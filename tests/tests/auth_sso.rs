//! SSO round trip against a real OpenID Connect provider (the `oidc-provider` package on Node,
//! `tests/js/oidc-provider.mjs`): discovery, authorization code with PKCE, state and nonce, the
//! callback creating then re-using the user, the session cookie and the allow-listed redirect.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::*;
use serde_json::json;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Node provider, stopped when dropped.
struct Provider(Child);

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_provider(port: u16, redirect_uris: [&str; 2]) -> Provider {
    let js = repo_root().join("tests/js");
    assert!(js.join("node_modules/oidc-provider").exists(), "run `npm ci` in tests/js (deploy/local/test does)");
    let log = std::env::temp_dir().join(format!("cdapi_oidc_{port}.log"));
    let child = Command::new("node")
        .args(["oidc-provider.mjs", &port.to_string(), redirect_uris[0], redirect_uris[1]])
        .current_dir(&js)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).expect("log"))
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "oidc-provider did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    Provider(child)
}

/// Follows redirects by hand (the cookie jar carries the provider's interaction cookies and
/// our state cookie) until the browser would leave for `stop_at`; returns that last response.
async fn browse(client: &reqwest::Client, mut url: String, stop_prefix: &str) -> reqwest::Response {
    for _ in 0..20 {
        let res = client.get(&url).send().await.unwrap_or_else(|e| panic!("GET {url}: {e}"));
        let Some(location) = res.headers().get("location").and_then(|v| v.to_str().ok()).map(str::to_owned) else {
            return res;
        };
        let next = reqwest::Url::parse(&url).and_then(|base| base.join(&location)).expect("location").to_string();
        if next.starts_with(stop_prefix) {
            return res;
        }
        url = next;
    }
    panic!("too many redirects");
}

#[tokio::test]
async fn openid_login_round_trip() {
    let (oidc_port, rest_port) = (free_port().expect("port"), free_port().expect("port"));
    let callback = |p: &str| format!("http://127.0.0.1:{rest_port}/auth/login/{p}/callback");
    let _provider = start_provider(oidc_port, [&callback("local"), &callback("plain")]);
    let oidc = format!("http://127.0.0.1:{oidc_port}");
    let auth_env = [
        ("AUTH_PROVIDERS", "local,plain"),
        ("AUTH_PLAIN_DRIVER", "oauth2"),
        ("AUTH_PLAIN_CLIENT_ID", "cdapi-plain"),
        ("AUTH_PLAIN_CLIENT_SECRET", "cdapi-secret"),
        ("AUTH_PLAIN_AUTHORIZE_URL", &format!("{oidc}/auth")),
        ("AUTH_PLAIN_ACCESS_URL", &format!("{oidc}/token")),
        ("AUTH_PLAIN_PROFILE_URL", &format!("{oidc}/me")),
        ("AUTH_PLAIN_SCOPE", "openid email"),
        ("AUTH_PLAIN_IDENTIFIER_KEY", "sub"),
        ("AUTH_PLAIN_ALLOW_PUBLIC_REGISTRATION", "true"),
        ("AUTH_LOCAL_DRIVER", "openid"),
        ("AUTH_LOCAL_CLIENT_ID", "cdapi"),
        ("AUTH_LOCAL_CLIENT_SECRET", "cdapi-secret"),
        ("AUTH_LOCAL_ISSUER_URL", &oidc),
        ("AUTH_LOCAL_ALLOW_PUBLIC_REGISTRATION", "true"),
        ("AUTH_LOCAL_REDIRECT_ALLOW_LIST", "http://app.example.com/done"),
        ("AUTH_LOCAL_ICON", "key"),
    ];
    let app = start(Spec {
        name: Some("sso".into()),
        rest_port: Some(rest_port),
        auth_env: auth_env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        ..Spec::default()
    })
    .expect("environment");

    let r = send(&app, reqwest::Method::GET, "/auth", None, &[], None).await;
    assert_eq!(r.body, json!({"data": [{"name": "local", "driver": "openid", "icon": "key"}, {"name": "plain", "driver": "oauth2"}], "disableDefault": false}));
    let r = send(&app, reqwest::Method::GET, "/auth/login/local?redirect=https://evil.example.com/", None, &[], None).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "redirect off the allow-list");

    let browser = || e2e_tests::http_client().cookie_store(true).redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let start_url = format!("{}/auth/login/local?redirect=http://app.example.com/done", app.rest_url);
    let mut user_ids = Vec::new();
    for round in 0..2 {
        let client = browser();
        let first = client.get(&start_url).send().await.expect("start");
        assert_eq!(first.status(), 302, "round {round}");
        let to_provider = first.headers().get("location").and_then(|v| v.to_str().ok()).expect("location").to_owned();
        assert!(to_provider.starts_with(&format!("http://127.0.0.1:{oidc_port}/")), "{to_provider}");
        for param in ["code_challenge_method=S256", "state=", "nonce=", "scope=openid"] {
            assert!(to_provider.contains(param), "{to_provider} lacks {param}");
        }
        // through the provider's login and consent, back to our callback
        let at_callback = browse(&client, to_provider, "http://app.example.com/").await;
        assert_eq!(at_callback.status(), 302, "round {round}: {:?}", at_callback.text().await);
        assert_eq!(at_callback.headers().get("location").and_then(|v| v.to_str().ok()), Some("http://app.example.com/done"));
        let cookies: Vec<String> = at_callback.headers().get_all("set-cookie").iter().filter_map(|v| v.to_str().ok().map(str::to_owned)).collect();
        let refresh = cookies
            .iter()
            .find_map(|c| c.strip_prefix("directus_refresh_token=").map(|rest| rest.split(';').next().unwrap_or_default().to_owned()))
            .unwrap_or_else(|| panic!("no refresh cookie in {cookies:?}"));
        // the session works: the refresh cookie gives an access token for the SSO user
        let r = send(&app, reqwest::Method::POST, "/auth/refresh", None, &[("cookie", &format!("directus_refresh_token={refresh}"))], None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let access = r.body["data"]["access_token"].as_str().expect("access token").to_owned();
        let r = post_json(&app, "/users/me/tfa/generate", json!({"password": "x"}), &[("authorization", &format!("Bearer {access}"))]).await;
        assert_error(&r, 401, "INVALID_CREDENTIALS", "an SSO user has no password to check");
        let user = app.sql("SELECT json_agg(json_build_object('id', id, 'email', email, 'provider', provider, 'external_identifier', external_identifier))::text FROM cdapi.users WHERE provider = 'local'").await;
        assert_eq!(user.as_array().map(Vec::len), Some(1), "one user, created once then found: {user}");
        assert_eq!((&user[0]["email"], &user[0]["external_identifier"]), (&json!("alice@example.com"), &json!("alice")));
        user_ids.push(user[0]["id"].clone());
    }
    assert_eq!(user_ids[0], user_ids[1]);

    // A callback without the browser's state cookie, or replayed, is refused.
    let client = browser();
    let first = client.get(&start_url).send().await.expect("start");
    let to_provider = first.headers().get("location").and_then(|v| v.to_str().ok()).expect("location").to_owned();
    let state = reqwest::Url::parse(&to_provider).expect("url").query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned()).expect("state");
    let r = send(&app, reqwest::Method::GET, &format!("/auth/login/local/callback?code=x&state={state}"), None, &[], None).await;
    assert_error(&r, 403, "FORBIDDEN", "no state cookie");
    // The provider reports an error (the user declined): back to the app with the reason.
    let declined = client.get(format!("{}/auth/login/local/callback?error=access_denied&state={state}", app.rest_url)).send().await.expect("callback");
    assert_eq!(declined.status(), 302);
    assert_eq!(declined.headers().get("location").and_then(|v| v.to_str().ok()), Some("http://app.example.com/done?reason=INVALID_CREDENTIALS"));
    let again = client.get(format!("{}/auth/login/local/callback?code=x&state={state}", app.rest_url)).send().await.expect("callback");
    assert_eq!(again.status(), 403, "a state is used once");
}

#[tokio::test]
async fn oauth2_login_reads_the_profile_url() {
    let (oidc_port, rest_port) = (free_port().expect("port"), free_port().expect("port"));
    let callback = |p: &str| format!("http://127.0.0.1:{rest_port}/auth/login/{p}/callback");
    let _provider = start_provider(oidc_port, [&callback("local"), &callback("plain")]);
    let oidc = format!("http://127.0.0.1:{oidc_port}");
    let auth_env = [
        ("AUTH_PROVIDERS", "plain".to_owned()),
        ("AUTH_PLAIN_DRIVER", "oauth2".into()),
        ("AUTH_PLAIN_CLIENT_ID", "cdapi-plain".into()),
        ("AUTH_PLAIN_CLIENT_SECRET", "cdapi-secret".into()),
        ("AUTH_PLAIN_AUTHORIZE_URL", format!("{oidc}/auth")),
        ("AUTH_PLAIN_ACCESS_URL", format!("{oidc}/token")),
        ("AUTH_PLAIN_PROFILE_URL", format!("{oidc}/me")),
        ("AUTH_PLAIN_SCOPE", "openid email".into()),
        ("AUTH_PLAIN_IDENTIFIER_KEY", "sub".into()),
        ("AUTH_PLAIN_ALLOW_PUBLIC_REGISTRATION", "true".into()),
    ];
    let app = start(Spec {
        name: Some("sso_oauth2".into()),
        rest_port: Some(rest_port),
        auth_env: auth_env.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect(),
        ..Spec::default()
    })
    .expect("environment");
    let client = e2e_tests::http_client().cookie_store(true).redirect(reqwest::redirect::Policy::none()).build().expect("client");
    // no redirect: the callback answers with the token body and sets the cookie of `mode`
    let first = client.get(format!("{}/auth/login/plain?mode=session", app.rest_url)).send().await.expect("start");
    assert_eq!(first.status(), 302);
    let to_provider = first.headers().get("location").and_then(|v| v.to_str().ok()).expect("location").to_owned();
    assert!(to_provider.contains("code_challenge_method=S256") && !to_provider.contains("nonce="), "{to_provider}");
    let done = browse(&client, to_provider, "http://app.example.com/").await;
    assert_eq!(done.status(), 200);
    let cookie =
        done.headers().get_all("set-cookie").iter().filter_map(|v| v.to_str().ok()).find(|c| c.starts_with("directus_session_token=")).map(str::to_owned);
    let body: serde_json::Value = done.json().await.expect("json");
    assert!(body["data"]["expires"].is_number() && body["data"].get("access_token").is_none(), "{body}");
    let session = cookie.and_then(|c| c.split(';').next().map(str::to_owned)).expect("session cookie");
    let r = post_json(&app, "/auth/refresh", json!({"mode": "session"}), &[("cookie", &session)]).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let user = app
        .sql("SELECT json_agg(json_build_object('email', email, 'external_identifier', external_identifier))::text FROM cdapi.users WHERE provider = 'plain'")
        .await;
    assert_eq!(user, json!([{"email": "bob@example.com", "external_identifier": "bob"}]));
}
