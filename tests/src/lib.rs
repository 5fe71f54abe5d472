//! Helpers shared by the end-to-end tests in `tests/`: HTTP calls against edge-rest and
//! ground-truth SQL against the same database.

pub use test_harness::{ADMIN_TOKEN, Dataset, TestApp, app};

use serde_json::Value;

/// Result of an HTTP call: status and parsed JSON body (`Value::Null` when not JSON).
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Body as JSON.
    pub body: Value,
    /// Response headers.
    pub headers: reqwest::header::HeaderMap,
}

/// `GET <rest_url><path>` with the admin token.
pub async fn get(app: &TestApp, path: &str) -> Reply {
    send(app, reqwest::Method::GET, path, Some(ADMIN_TOKEN), &[], None).await
}

/// Any request; `token` goes into `Authorization: Bearer`.
pub async fn send(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<(&str, String)>,
) -> Reply {
    let client = reqwest::Client::new();
    let mut req = client.request(method, format!("{}{}", app.rest_url, path));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some((content_type, b)) = body {
        req = req.header("content-type", content_type).body(b);
    }
    let res = req.send().await.unwrap_or_else(|e| panic!("request {path} failed: {e}"));
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let text = res.text().await.unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    Reply { status, body, headers }
}

/// Runs `sql` (which must return one text/json column in one row) on the test database and
/// parses it as JSON: the ground truth a response is compared with.
pub async fn sql_json(app: &TestApp, sql: &str) -> Value {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&app.database_url).await.unwrap_or_else(|e| panic!("connect: {e}"));
    let text: Option<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_one(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("ground truth {sql}: {e}"));
    serde_json::from_str(&text.unwrap_or_else(|| "null".into())).unwrap_or(Value::Null)
}

/// Asserts an error reply: status and `errors[0].extensions.code`.
pub fn assert_error(r: &Reply, status: u16, code: &str, context: &str) {
    assert_eq!(r.status, status, "{context}: status; body {}", r.body);
    assert_eq!(r.body["errors"][0]["extensions"]["code"], code, "{context}: code; body {}", r.body);
    assert!(r.body["errors"][0]["message"].as_str().is_some_and(|m| !m.is_empty()), "{context}: message");
}

/// The values of `key` in every object of a JSON array.
pub fn column(v: &Value, key: &str) -> Vec<Value> {
    v.as_array().map(|a| a.iter().map(|o| o[key].clone()).collect()).unwrap_or_default()
}
