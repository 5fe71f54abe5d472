//! Requests to an environment as methods (docs/testing.md "Writing an end-to-end test"):
//! `app.get("/items/articles")`, `app.admin(Method::POST, "/fields/x", body)`,
//! `app.as_token(Some(&token), Method::GET, "/users/me", None)`, `app.ok(...)` for a call that
//! must succeed, `app.sql("SELECT ...")` for the ground truth. Each delegates to the
//! crate's functions of the same meaning ([`crate::get`], [`crate::fixture::admin`],
//! [`crate::fixture::call`], [`crate::sql_json`], [`crate::graphql_as`]).

use crate::{ADMIN_TOKEN, Reply, TestApp};
use reqwest::Method;
use serde_json::Value;

/// The requests a test sends to a [`TestApp`] (edge-rest, with GraphQL through it) and its
/// database.
#[allow(async_fn_in_trait)] // test code: the futures are awaited in place, never sent
pub trait Api {
    /// `GET path` as the admin.
    async fn get(&self, path: &str) -> Reply;
    /// `method path` as the admin, with a JSON body (`null`: none).
    async fn admin(&self, method: Method, path: &str, body: Value) -> Reply;
    /// `method path` with `token` (`None`: the public) and an optional JSON body.
    async fn as_token(&self, token: Option<&str>, method: Method, path: &str, body: Option<Value>) -> Reply;
    /// [`Api::admin`] that must succeed (2xx; the test fails with the answer otherwise): the
    /// reply's `data`.
    async fn ok(&self, method: Method, path: &str, body: Value) -> Value;
    /// A GraphQL query to `endpoint` (`/graphql` or `/graphql/system`) with `token`.
    async fn graphql(&self, endpoint: &str, token: Option<&str>, query: &str, variables: Value) -> Reply;
    /// The JSON value `sql` computes (one text or json column of one row) on the test database:
    /// the ground truth a response is compared with.
    async fn sql(&self, sql: &str) -> Value;
}

impl Api for TestApp {
    async fn get(&self, path: &str) -> Reply {
        crate::send(self, Method::GET, path, Some(ADMIN_TOKEN), &[], None).await
    }

    async fn admin(&self, method: Method, path: &str, body: Value) -> Reply {
        let body = (!body.is_null()).then_some(body);
        self.as_token(Some(ADMIN_TOKEN), method, path, body).await
    }

    async fn as_token(&self, token: Option<&str>, method: Method, path: &str, body: Option<Value>) -> Reply {
        crate::send(self, method, path, token, &[], body.map(|b| ("application/json", b.to_string()))).await
    }

    async fn ok(&self, method: Method, path: &str, body: Value) -> Value {
        let r = self.admin(method.clone(), path, body.clone()).await;
        assert!((200..300).contains(&r.status), "{method} {path} {body}: {} {}", r.status, r.body);
        r.body["data"].clone()
    }

    async fn graphql(&self, endpoint: &str, token: Option<&str>, query: &str, variables: Value) -> Reply {
        let body = serde_json::json!({"query": query, "variables": variables}).to_string();
        crate::send(self, Method::POST, endpoint, token, &[], Some(("application/json", body))).await
    }

    async fn sql(&self, sql: &str) -> Value {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&self.database_url).await.unwrap_or_else(|e| panic!("connect: {e}"));
        let text: Option<String> =
            sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(&mut conn).await.unwrap_or_else(|e| panic!("ground truth {sql}: {e}"));
        serde_json::from_str(&text.unwrap_or_else(|| "null".into())).unwrap_or(Value::Null)
    }
}

/// An environment of the test's own (its own database with `dataset`, its own processes),
/// named after the test (the thread's name under `cargo test`), stopped when dropped: no other
/// test sees its data. Starting one takes a few seconds; tests of a file that may share data
/// share one instead (a `static OnceLock<TestApp>`).
pub fn own_app(dataset: crate::Dataset) -> TestApp {
    static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let test = std::thread::current().name().unwrap_or("test").rsplit("::").next().unwrap_or("test").to_owned();
    let short: String = test.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).take(24).collect();
    let name = format!("{short}_{}", STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    crate::start(crate::Spec { dataset, name: Some(name), ..crate::Spec::default() }).unwrap_or_else(|e| panic!("environment of {test}: {e:#}"))
}
