//! Helpers shared by the end-to-end tests in `tests/`: HTTP calls against edge-rest and
//! ground-truth SQL against the same database.

pub mod api;
pub mod differential;
pub mod directus_peer;
pub mod fixture;
pub mod load;
pub mod random_steps;

pub use test_harness::{ADMIN_TOKEN, Dataset, S3_BUCKET, Spec, TestApp, app, free_port, repo_root, start};

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

/// A reqwest client builder. In a workspace build reqwest's TLS features are unified with
/// auth-service's (`rustls-no-provider`), so the process-wide rustls provider is installed here
/// once (ring, as auth-service does) before any client is built.
pub fn http_client() -> reqwest::ClientBuilder {
    static PROVIDER: std::sync::Once = std::sync::Once::new();
    PROVIDER.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
}

/// Any request; `token` goes into `Authorization: Bearer`.
pub async fn send(app: &TestApp, method: reqwest::Method, path: &str, token: Option<&str>, headers: &[(&str, &str)], body: Option<(&str, String)>) -> Reply {
    send_at(&app.rest_url, method, path, token, headers, body).await
}

/// [`send`] to the edge at `base` (one of [`TestApp::rest_urls`]).
pub async fn send_at(base: &str, method: reqwest::Method, path: &str, token: Option<&str>, headers: &[(&str, &str)], body: Option<(&str, String)>) -> Reply {
    let client = http_client().build().unwrap_or_else(|e| panic!("http client: {e}"));
    let mut req = client.request(method, format!("{base}{path}"));
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

/// The sum of Prometheus counter `name` (e.g. `cdapi_cache_lookups_total`) over the samples
/// whose labels include `label` (e.g. `result="hit"`), over every replica of `process`
/// (`core`, `auth`, `edge`, `graphql`). The environment needs [`Spec::metrics`].
pub async fn metric_total(app: &TestApp, process: &str, name: &str, label: &str) -> f64 {
    let mut total = 0.0;
    for (_, url) in app.metrics.iter().filter(|(n, _)| *n == process) {
        let res = http_client().build().unwrap_or_else(|e| panic!("http client: {e}")).get(url).send().await;
        let text = res.unwrap_or_else(|e| panic!("metrics {url}: {e}")).text().await.unwrap_or_default();
        total += text
            .lines()
            .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(label))
            .filter_map(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()))
            .sum::<f64>();
    }
    total
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

/// `POST <path>` with a JSON body and extra headers (no token).
pub async fn post_json(app: &TestApp, path: &str, body: Value, headers: &[(&str, &str)]) -> Reply {
    send(app, reqwest::Method::POST, path, None, headers, Some(("application/json", body.to_string()))).await
}

/// The `Set-Cookie` headers of a reply.
pub fn set_cookies(r: &Reply) -> Vec<String> {
    r.headers.get_all("set-cookie").iter().filter_map(|v| v.to_str().ok().map(str::to_owned)).collect()
}

/// The value a reply sets cookie `name` to (`Some("")` when it clears it).
pub fn cookie_value(r: &Reply, name: &str) -> Option<String> {
    set_cookies(r).iter().find_map(|c| {
        let (pair, _) = c.split_once(';').unwrap_or((c.as_str(), ""));
        let (k, v) = pair.split_once('=')?;
        (k.trim() == name).then(|| v.trim().to_owned())
    })
}

/// Runs SQL statements on the test database.
pub async fn exec(app: &TestApp, sql: &str) {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&app.database_url).await.unwrap_or_else(|e| panic!("connect: {e}"));
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// Creates an active user with an argon2id password hash; returns its id.
pub async fn create_user(app: &TestApp, email: &str, password: &str) -> String {
    use sqlx::Connection;
    let hash = access_token::passwords::hash_now(password).unwrap_or_else(|e| panic!("hash: {}", e.message));
    let mut conn = sqlx::PgConnection::connect(&app.database_url).await.unwrap_or_else(|e| panic!("connect: {e}"));
    sqlx::query_scalar("INSERT INTO cdapi.users (email, password_hash) VALUES ($1, $2) RETURNING id::text")
        .bind(email)
        .bind(hash)
        .fetch_one(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("create user {email}: {e}"))
}

/// The mail delivered to `to`, waiting up to `secs` seconds; `None` when none came.
/// Mail is `{"from", "to": [...], "subject", "body"}` (see the harness's SMTP sink).
pub async fn wait_mail(app: &TestApp, to: &str, secs: u64) -> Option<Value> {
    let dir = app.mail_dir.as_ref()?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "json")
                && let Ok(text) = std::fs::read_to_string(&path)
                && let Ok(mail) = serde_json::from_str::<Value>(&text)
                && mail["to"].as_array().is_some_and(|a| a.iter().any(|t| t.as_str().is_some_and(|t| t.eq_ignore_ascii_case(to))))
            {
                return Some(mail);
            }
        }
        if std::time::Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The `data` of a GraphQL reply, failing the test on a non-200 status or any error.
pub fn gql_data(reply: &Reply) -> &Value {
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(reply.body.get("errors").is_none(), "{}", reply.body);
    &reply.body["data"]
}

/// The claims of a JWT (its payload, base64url-decoded), unverified: for tests that look at
/// what a token carries. `Value::Null` when `token` is not a JWT.
pub fn jwt_claims(token: &str) -> Value {
    let Some(payload) = token.split('.').nth(1) else { return Value::Null };
    let sextet = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'-' | b'+' => Some(62),
        b'_' | b'/' => Some(63),
        _ => None,
    };
    let (mut bytes, mut acc, mut bits) = (Vec::new(), 0u32, 0u32);
    for v in payload.bytes().filter_map(sextet) {
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            bytes.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

/// Typed field paths of their REST spellings (`["id", "author.name", "year(date)"]`), for gRPC
/// queries. Panics on a malformed path (a test's own mistake).
pub fn paths(texts: &[&str]) -> Vec<cdapi_proto::v1::FieldPath> {
    texts.iter().map(|t| query_language::paths::parse(t).unwrap_or_else(|e| panic!("{t}: {}", e.message))).collect()
}

/// Typed sort keys of their REST spellings (`["-title", "id"]`).
pub fn sort_keys(texts: &[&str]) -> Vec<cdapi_proto::v1::SortKey> {
    texts.iter().map(|t| query_language::paths::parse_sort(t).unwrap_or_else(|e| panic!("{t}: {}", e.message))).collect()
}

/// `len` bytes that compress badly and differ per `seed` (file contents for upload tests).
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// A response header's value as text (empty when absent or not text).
pub fn header_text<'a>(headers: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default()
}

/// `POST /files` (multipart) with text `fields`, then one file part `filename` of media type
/// `mime` holding `data`; returns the status and the JSON body (`Value::Null` when not JSON).
pub async fn upload_file(app: &TestApp, token: Option<&str>, fields: &[(&str, &str)], filename: &str, mime: &str, data: Vec<u8>) -> (u16, Value) {
    send_file(app, reqwest::Method::POST, "/files", token, fields, filename, mime, data).await
}

/// `<method> <path>` (`POST /files`, `PATCH /files/:id`) with `multipart/form-data`: the text
/// `fields`, then one file part (`filename`, `mime`, `data`); the status and the JSON body.
#[allow(clippy::too_many_arguments)]
pub async fn send_file(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    token: Option<&str>,
    fields: &[(&str, &str)],
    filename: &str,
    mime: &str,
    data: Vec<u8>,
) -> (u16, Value) {
    let mut form = reqwest::multipart::Form::new();
    for (k, v) in fields {
        form = form.text(k.to_string(), v.to_string());
    }
    let part = reqwest::multipart::Part::bytes(data).file_name(filename.to_owned()).mime_str(mime).unwrap_or_else(|e| panic!("mime {mime}: {e}"));
    form = form.part("file", part);
    let client = http_client().build().unwrap_or_else(|e| panic!("http client: {e}"));
    let mut req = client.request(method, format!("{}{path}", app.rest_url)).multipart(form);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.send().await.unwrap_or_else(|e| panic!("upload {filename}: {e}"));
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// `GET <rest_url><path>` with `token` and `headers`: status, headers and the body's bytes.
pub async fn get_raw(app: &TestApp, path: &str, token: Option<&str>, headers: &[(&str, &str)]) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let client = http_client().build().unwrap_or_else(|e| panic!("http client: {e}"));
    let mut req = client.get(format!("{}{path}", app.rest_url));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let res = req.send().await.unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let (status, headers) = (res.status().as_u16(), res.headers().clone());
    (status, headers, res.bytes().await.unwrap_or_else(|e| panic!("body of {path}: {e}")).to_vec())
}

/// The TOTP code (RFC 6238: SHA-1, 6 digits, 30 s steps, as auth-service) of the base32
/// `secret` at `t` (Unix seconds).
pub fn totp_code(secret: &str, t: u64) -> String {
    let bytes = totp_rs::Secret::Encoded(secret.to_owned()).to_bytes().unwrap_or_else(|e| panic!("base32 secret: {e:?}"));
    // Unchecked: Directus's secrets (the import tests) have 80 bits.
    totp_rs::TOTP::new_unchecked(totp_rs::Algorithm::SHA1, 6, 1, 30, bytes, None, "x".into()).generate(t)
}

/// The blobs (finished or `.incoming`) whose first bytes begin `head`, the start of a file's
/// content: other tests upload meanwhile, so a file's blobs are told apart by content, not by
/// name; a blob cut short still counts.
pub fn blobs_holding(app: &TestApp, head: &[u8]) -> Vec<String> {
    let root = app.storage_dir();
    blobs(app)
        .into_iter()
        .filter(|b| {
            let mut start = Vec::new();
            let read = std::fs::File::open(root.join(b)).and_then(|f| std::io::Read::read_to_end(&mut std::io::Read::take(f, head.len() as u64), &mut start));
            read.is_ok() && !start.is_empty() && head.starts_with(&start)
        })
        .collect()
}

/// The blobs in the environment's storage, as relative paths, sorted.
pub fn blobs(app: &TestApp) -> Vec<String> {
    fn walk(dir: &std::path::Path, root: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, root, out);
            } else {
                out.push(path.strip_prefix(root).unwrap_or(&path).to_string_lossy().into_owned());
            }
        }
    }
    let root = app.storage_dir();
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    out.sort();
    out
}
