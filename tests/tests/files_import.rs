//! `POST /files/import` (docs/files.md; Directus's): a file fetched by the core from a URL and stored
//! as an upload, from a real HTTP server of the test's own on 127.0.0.3 (the one network this
//! environment's FILES_IMPORT_ALLOW_NETWORKS opens). From the attacker's side: private and
//! loopback addresses, however spelled (literal, a host name, a redirect), are refused before
//! any connection, and a secret server on 127.0.0.1 is never reached; other schemes, redirect
//! loops, slow and oversized answers fail cleanly, leaving no row and no blob; roles without a
//! create grant make the core fetch nothing. Also: an upload slower than CORE_TIMEOUT_MS is not
//! cut (files calls have no edge deadline).

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::role;
use e2e_tests::{ADMIN_TOKEN, Dataset, Spec, TestApp, assert_error, gql_data};
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Redirects one import follows (the core's `files::import::MAX_REDIRECTS`).
const MAX_REDIRECTS: usize = 5;

/// Largest file in this environment (FILES_MAX_UPLOAD_SIZE).
const MAX_UPLOAD: usize = 200_000;

fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        e2e_tests::start(Spec {
            dataset: Dataset::DemoWrites,
            name: Some("files_import".into()),
            core_env: vec![
                ("FILES_MAX_UPLOAD_SIZE".into(), MAX_UPLOAD.to_string()),
                ("FILES_IMPORT_ALLOW_NETWORKS".into(), "127.0.0.3/32".into()),
                ("FILES_IMPORT_TIMEOUT_MS".into(), "3000".into()),
            ],
            edge_env: vec![("CORE_TIMEOUT_MS".into(), "2000".into())],
            ..Spec::default()
        })
        .unwrap_or_else(|e| panic!("environment: {e:#}"))
    })
}

/// A tiny HTTP/1.1 server: answers each request from `answer(path)`, records the paths asked.
struct Origin {
    port: u16,
    hits: Arc<Mutex<Vec<String>>>,
}

/// What the origin sends back for a path: raw head and body, and a pause before the body's end.
type Answer = (String, Vec<u8>, Option<std::time::Duration>);

async fn origin(ip: &str, answer: impl Fn(&str) -> Answer + Send + Sync + 'static) -> Origin {
    let listener = tokio::net::TcpListener::bind((ip, 0)).await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let hits = Arc::new(Mutex::new(Vec::new()));
    let seen = hits.clone();
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let (seen, answer) = (seen.clone(), answer.clone());
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&head);
                let path = text.split(' ').nth(1).unwrap_or_default().to_owned();
                seen.lock().expect("hits").push(path.clone());
                let (head, body, pause) = answer(&path);
                let _ = sock.write_all(head.as_bytes()).await;
                let cut = if pause.is_some() { body.len().min(10) } else { body.len() };
                let _ = sock.write_all(&body[..cut]).await;
                if let Some(p) = pause {
                    tokio::time::sleep(p).await;
                    let _ = sock.write_all(&body[cut..]).await;
                }
                let _ = sock.shutdown().await;
            });
        }
    });
    Origin { port, hits }
}

fn ok(content_type: &str, body: &[u8]) -> Answer {
    (format!("HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len()), body.to_vec(), None)
}

fn redirect(to: &str) -> Answer {
    (format!("HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"), Vec::new(), None)
}

async fn import(app: &TestApp, token: Option<&str>, body: Value) -> e2e_tests::Reply {
    app.as_token(token, Method::POST, "/files/import", Some(body)).await
}

/// Rows of files named `name` and blobs (finished or incoming) whose bytes start as `head`.
async fn traces(app: &TestApp, name: &str, head: &[u8]) -> (Value, usize) {
    let rows = app.sql(&format!("SELECT count(*)::text FROM cdapi.files WHERE filename_download = '{name}'")).await;
    (rows, e2e_tests::blobs_holding(app, head).len())
}

#[tokio::test]
async fn a_file_is_imported_from_a_url() {
    let app = env();
    let notes = b"imported notes, line one\n".to_vec();
    let served = notes.clone();
    let site = origin("127.0.0.3", move |path| match path {
        "/docs/Meeting%20notes.txt" => ok("text/plain; charset=utf-8", &served),
        "/moved" => redirect("/docs/Meeting%20notes.txt"),
        _ => ("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into(), Vec::new(), None),
    })
    .await;
    let url = format!("http://127.0.0.3:{}/moved", site.port);
    let r = app
        .as_token(
            Some(ADMIN_TOKEN),
            Method::POST,
            "/files/import?fields=id,title,filename_download,type,filesize,uploaded_by,storage",
            Some(json!({"url": url, "data": {"description": "from the wiki"}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let file = &r.body["data"];
    assert_eq!(file["filename_download"], "Meeting notes.txt", "the final URL's name: {file}");
    assert_eq!(file["title"], "Meeting notes");
    assert_eq!(file["type"], "text/plain; charset=utf-8");
    assert_eq!(file["filesize"].to_string().trim_matches('"'), notes.len().to_string(), "{file}");
    assert_eq!(file["storage"], "local");
    assert!(file["uploaded_by"].is_string(), "{file}");
    let id = file["id"].as_str().expect("id");
    let description = app.sql(&format!("SELECT to_json(description)::text FROM cdapi.files WHERE id = '{id}'")).await;
    assert_eq!(description, json!("from the wiki"));
    let client = e2e_tests::http_client().build().expect("client");
    let res = client.get(format!("{}/assets/{id}", app.rest_url)).bearer_auth(ADMIN_TOKEN).send().await.expect("asset");
    assert_eq!(res.bytes().await.expect("body").to_vec(), notes, "the blob is the origin's bytes");
    assert_eq!(site.hits.lock().expect("hits")[..2], ["/moved".to_owned(), "/docs/Meeting%20notes.txt".to_owned()]);

    // The same through /graphql/system, as Directus's `import_file`.
    let g = app
        .graphql(
            "/graphql/system",
            Some(ADMIN_TOKEN),
            "mutation ($url: String!) { import_file(url: $url, data: {title: \"Via GraphQL\"}) { title filename_download } }",
            json!({"url": url}),
        )
        .await;
    assert_eq!(gql_data(&g)["import_file"], json!({"title": "Via GraphQL", "filename_download": "Meeting notes.txt"}), "{}", g.body);
    let g = app.graphql("/graphql/system", Some(ADMIN_TOKEN), "mutation { import_file(url: \"http://127.0.0.1:1/x\") { id } }", json!({})).await;
    assert_eq!(g.body["errors"][0]["extensions"]["code"], "SERVICE_UNAVAILABLE", "{}", g.body);

    // The origin's failure is the import's.
    let r = import(app, Some(ADMIN_TOKEN), json!({"url": format!("http://127.0.0.3:{}/gone.txt", site.port)})).await;
    assert_error(&r, 503, "SERVICE_UNAVAILABLE", "a 404 at the origin");
    assert_eq!(r.body["errors"][0]["extensions"]["service"], "external-file");
    assert!(r.body["errors"][0]["extensions"]["reason"].as_str().is_some_and(|m| m.contains("answered 404")), "{}", r.body);
    // Bad bodies.
    assert_error(&import(app, Some(ADMIN_TOKEN), json!({})).await, 400, "INVALID_PAYLOAD", "no url");
    assert_error(&import(app, Some(ADMIN_TOKEN), json!({"url": "not a url"})).await, 400, "INVALID_PAYLOAD", "not a URL");
    assert_error(&import(app, Some(ADMIN_TOKEN), json!({"url": url, "data": "x"})).await, 400, "INVALID_PAYLOAD", "data not an object");
    for scheme in ["file:///etc/passwd", "ftp://127.0.0.3/x", "gopher://127.0.0.3:70/x", "data:text/plain,hello"] {
        assert_error(&import(app, Some(ADMIN_TOKEN), json!({"url": scheme})).await, 400, "INVALID_PAYLOAD", scheme);
    }
    let r = app.as_token(Some(ADMIN_TOKEN), Method::GET, "/files/import", None).await;
    assert_eq!(r.status, 405);
}

#[tokio::test]
async fn private_addresses_are_never_fetched() {
    let app = env();
    // What an attacker wants to reach: a service on the loopback interface.
    let secret = origin("127.0.0.1", |_| ok("text/plain", b"internal secret")).await;
    let s = secret.port;
    let site = origin("127.0.0.3", move |path| match path {
        "/to-literal" => redirect(&format!("http://127.0.0.1:{s}/secret")),
        "/to-name" => redirect(&format!("http://localhost:{s}/secret")),
        "/to-mapped" => redirect(&format!("http://[::ffff:127.0.0.1]:{s}/secret")),
        "/to-file" => redirect("file:///etc/passwd"),
        "/loop" => redirect("/loop"),
        _ => ok("text/plain", b"fine"),
    })
    .await;
    let o = site.port;
    let denied = [
        format!("http://127.0.0.1:{s}/secret"),
        format!("http://localhost:{s}/secret"),
        format!("http://2130706433:{s}/secret"),
        format!("http://0x7f.1:{s}/secret"),
        format!("http://[::1]:{s}/secret"),
        format!("http://[::ffff:7f00:1]:{s}/secret"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://10.255.255.1/".to_owned(),
        "http://[fd00::1]/".to_owned(),
        format!("http://127.0.0.3:{o}/to-literal"),
        format!("http://127.0.0.3:{o}/to-name"),
        format!("http://127.0.0.3:{o}/to-mapped"),
    ];
    for url in &denied {
        let r = import(app, Some(ADMIN_TOKEN), json!({"url": url})).await;
        assert_error(&r, 503, "SERVICE_UNAVAILABLE", url);
        let reason = r.body["errors"][0]["extensions"]["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("denied address"), "{url}: {}", r.body);
    }
    for url in [format!("http://127.0.0.3:{o}/to-file"), format!("http://127.0.0.3:{o}/loop")] {
        assert_error(&import(app, Some(ADMIN_TOKEN), json!({"url": url})).await, 503, "SERVICE_UNAVAILABLE", &url);
    }
    assert!(secret.hits.lock().expect("hits").is_empty(), "the secret server was reached: {:?}", secret.hits.lock().expect("hits"));
    let loops = site.hits.lock().expect("hits").iter().filter(|p| *p == "/loop").count();
    assert_eq!(loops, 1 + MAX_REDIRECTS, "redirects are bounded");
    let rows = app.sql("SELECT count(*)::text FROM cdapi.files WHERE filename_download IN ('secret', 'passwd', 'loop')").await;
    assert_eq!(rows, json!(0));
}

#[tokio::test]
async fn slow_and_oversized_imports_leave_nothing() {
    let app = env();
    let big = vec![7u8; MAX_UPLOAD + 1];
    let (declared, streamed) = (big.clone(), big.clone());
    let slow_body = vec![9u8; 5000];
    let slow = slow_body.clone();
    let site = origin("127.0.0.3", move |path| match path {
        "/declared.bin" => ok("application/octet-stream", &declared),
        // No Content-Length: the size shows only as the bytes come.
        "/streamed.bin" => ("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n".into(), streamed.clone(), None),
        "/slow.bin" => {
            let (head, body, _) = ok("application/octet-stream", &slow);
            (head, body, Some(std::time::Duration::from_secs(8)))
        }
        _ => ok("text/plain", b"fine"),
    })
    .await;
    let url = |p: &str| format!("http://127.0.0.3:{}{p}", site.port);
    let r = import(app, Some(ADMIN_TOKEN), json!({"url": url("/declared.bin")})).await;
    assert_error(&r, 413, "CONTENT_TOO_LARGE", "a declared size past FILES_MAX_UPLOAD_SIZE");
    let r = import(app, Some(ADMIN_TOKEN), json!({"url": url("/streamed.bin")})).await;
    assert_error(&r, 413, "CONTENT_TOO_LARGE", "a streamed size past FILES_MAX_UPLOAD_SIZE");
    let started = std::time::Instant::now();
    let r = import(app, Some(ADMIN_TOKEN), json!({"url": url("/slow.bin")})).await;
    assert_error(&r, 503, "SERVICE_UNAVAILABLE", "slower than FILES_IMPORT_TIMEOUT_MS");
    assert!(r.body["errors"][0]["extensions"]["reason"].as_str().is_some_and(|m| m.contains("FILES_IMPORT_TIMEOUT_MS")), "{}", r.body);
    assert!(started.elapsed() < std::time::Duration::from_secs(7), "cut at the timeout, not at the origin's pace");
    for (name, head) in [("declared.bin", &big[..64]), ("streamed.bin", &big[..64]), ("slow.bin", &slow_body[..64])] {
        assert_eq!(traces(app, name, head).await, (json!(0), 0), "{name} left a row or a blob");
    }
}

#[tokio::test]
async fn roles_without_a_create_grant_fetch_nothing() {
    let app = env();
    let site = origin("127.0.0.3", |_| ok("text/plain", b"fine")).await;
    let url = format!("http://127.0.0.3:{}/a.txt", site.port);
    let (reader, _, _) = role(app, "FileReaders", json!([{"collection": "directus_files", "action": "read", "fields": ["*"]}])).await;
    assert_error(&import(app, Some(&reader), json!({"url": url})).await, 403, "FORBIDDEN", "a reader imports");
    assert_error(&import(app, None, json!({"url": url})).await, 403, "FORBIDDEN", "the public imports");
    assert!(site.hits.lock().expect("hits").is_empty(), "the core fetched for a caller without a grant");
    // A role allowed to create files, but only some fields: the server's fields are its own.
    let (importer, importer_id, _) = role(
        app,
        "FileImporters",
        json!([
            {"collection": "directus_files", "action": "create", "fields": ["title"]},
            {"collection": "directus_files", "action": "read", "fields": ["*"], "permissions": {"uploaded_by": {"_eq": "$CURRENT_USER"}}},
        ]),
    )
    .await;
    let r = import(app, Some(&importer), json!({"url": url, "data": {"title": "Mine", "filename_disk": "../../x", "uploaded_by": null}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!((r.body["data"]["title"].clone(), r.body["data"]["uploaded_by"].clone()), (json!("Mine"), json!(importer_id)));
    assert!(!r.body["data"]["filename_disk"].as_str().unwrap_or_default().contains(".."), "{}", r.body);
    let r = import(app, Some(&importer), json!({"url": url, "data": {"description": "not granted"}})).await;
    assert_eq!(r.status, 403, "a field outside the grant: {}", r.body);
}

#[tokio::test]
async fn an_upload_slower_than_the_edge_deadline_is_not_cut() {
    let app = env();
    // CORE_TIMEOUT_MS is 2 s here; the upload takes about 3 s at the client's pace.
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
    tokio::spawn(async move {
        for i in 0..6u8 {
            if tx.send(Ok(vec![i; 10_000])).await.is_err() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
    });
    let part =
        reqwest::multipart::Part::stream(reqwest::Body::wrap_stream(futures_util::stream::unfold(
            rx,
            |mut rx| async move { rx.recv().await.map(|c| (c, rx)) },
        )))
        .file_name("paced.bin");
    let form = reqwest::multipart::Form::new().part("file", part);
    let client = e2e_tests::http_client().build().expect("client");
    let res = client.post(format!("{}/files", app.rest_url)).bearer_auth(ADMIN_TOKEN).multipart(form).send().await.expect("post");
    let status = res.status().as_u16();
    let body: Value = res.json().await.unwrap_or(Value::Null);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["filesize"].to_string().trim_matches('"'), "60000", "{body}");
    let _ = app.admin(Method::DELETE, &format!("/files/{}", body["data"]["id"].as_str().unwrap_or_default()), Value::Null).await;
}
