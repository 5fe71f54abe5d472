//! Files in an S3-compatible bucket (docs/files.md: S3-compatible by setting): the environment
//! stores its files in location `s3` (STORAGE_LOCATIONS=s3, STORAGE_S3_*) on a real S3 server
//! of its own (moto's), which the test reads directly. Uploads of several parts land as one
//! object under the file's name; assets are read back with `Range` and `ETag`; a deleted file's
//! object goes; an upload cut mid-way or past FILES_MAX_UPLOAD_SIZE leaves no row, no object
//! and no open multipart upload in the bucket.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::eventually;
use e2e_tests::{ADMIN_TOKEN, Dataset, S3_BUCKET, Spec, TestApp, assert_error};
use e2e_tests::{header_text as header, noise as bytes};
use reqwest::Method;
use serde_json::json;
use std::sync::OnceLock;

/// Largest upload in this environment (FILES_MAX_UPLOAD_SIZE): room for three 5 MiB parts.
const MAX_UPLOAD: usize = 16_000_000;

fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        e2e_tests::start(Spec {
            dataset: Dataset::DemoWrites,
            name: Some("files_s3".into()),
            s3: true,
            core_env: vec![("FILES_MAX_UPLOAD_SIZE".into(), MAX_UPLOAD.to_string())],
            ..Spec::default()
        })
        .unwrap_or_else(|e| panic!("environment: {e:#}"))
    })
}

/// A request to the bucket as the environment's key (the test server checks that a request
/// names a key, not its signature): status and body.
async fn bucket(app: &TestApp, path_and_query: &str) -> (u16, Vec<u8>) {
    let s3 = app.s3_url.as_deref().expect("an S3 environment");
    let auth = "AWS4-HMAC-SHA256 Credential=test-key/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00";
    let res = e2e_tests::http_client()
        .build()
        .expect("client")
        .get(format!("{s3}/{S3_BUCKET}{path_and_query}"))
        .header("authorization", auth)
        .send()
        .await
        .expect("S3 request");
    (res.status().as_u16(), res.bytes().await.expect("S3 body").to_vec())
}

/// The bucket's object keys, and the keys of its multipart uploads still open.
async fn bucket_state(app: &TestApp) -> (Vec<String>, Vec<String>) {
    let keys = |xml: &[u8], open: &str| -> Vec<String> {
        let text = String::from_utf8_lossy(xml);
        text.split(open).skip(1).filter_map(|rest| rest.split_once("<Key>").and_then(|(_, k)| k.split_once("</Key>")).map(|(k, _)| k.to_owned())).collect()
    };
    let (_, listing) = bucket(app, "?list-type=2").await;
    let (_, uploads) = bucket(app, "?uploads").await;
    (keys(&listing, "<Contents>"), keys(&uploads, "<Upload>"))
}

async fn upload(app: &TestApp, filename: &str, data: Vec<u8>) -> (u16, serde_json::Value) {
    let part = reqwest::multipart::Part::bytes(data).file_name(filename.to_owned()).mime_str("application/octet-stream").expect("mime");
    let form = reqwest::multipart::Form::new().part("file", part);
    let client = e2e_tests::http_client().build().expect("client");
    let res = client.post(format!("{}/files", app.rest_url)).bearer_auth(ADMIN_TOKEN).multipart(form).send().await.expect("upload");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or_default())
}

async fn asset(app: &TestApp, id: &str, headers: &[(&str, &str)]) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let client = e2e_tests::http_client().build().expect("client");
    let mut req = client.get(format!("{}/assets/{id}", app.rest_url)).bearer_auth(ADMIN_TOKEN);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let res = req.send().await.expect("asset");
    let (status, h) = (res.status().as_u16(), res.headers().clone());
    (status, h, res.bytes().await.expect("body").to_vec())
}

#[tokio::test]
async fn files_are_stored_read_and_removed_in_an_s3_bucket() {
    let app = env();
    // 12 MB: three parts of the multipart upload.
    let data = bytes(12_000_000, 1);
    let (status, body) = upload(app, "video.bin", data.clone()).await;
    assert_eq!(status, 200, "{body}");
    let id = body["data"]["id"].as_str().expect("id").to_owned();
    assert_eq!(body["data"]["storage"], "s3");
    let key = format!("{id}.bin");
    let (status, stored) = bucket(app, &format!("/{key}")).await;
    assert!(status == 200 && stored == data, "the object holds the upload ({status}, {} bytes)", stored.len());
    // (Temporary objects and open uploads are the other test's to check: it uploads meanwhile.)
    let (objects, _) = bucket_state(app).await;
    assert!(objects.contains(&key), "{objects:?}");

    let (status, h, got) = asset(app, &id, &[]).await;
    assert!(status == 200 && got == data, "the asset is the object ({status})");
    let etag = header(&h, "etag").to_owned();
    assert!(etag.starts_with('"') && etag.ends_with('"') && !etag.contains("\"\""), "one pair of quotes: {etag}");
    let (status, h, got) = asset(app, &id, &[("range", "bytes=6000000-6000099")]).await;
    assert_eq!((status, header(&h, "content-range")), (206, "bytes 6000000-6000099/12000000"));
    assert!(got == data[6_000_000..6_000_100], "the range's bytes, across a part boundary");
    let (status, _, got) = asset(app, &id, &[("if-none-match", &etag)]).await;
    assert!(status == 304 && got.is_empty(), "not modified ({status})");

    let r = app.admin(Method::DELETE, &format!("/files/{id}"), json!(null)).await;
    assert_eq!(r.status, 204, "{}", r.body);
    eventually("the object goes with its row", || async { bucket(app, &format!("/{key}")).await.0 == 404 }).await;
    assert_error(&app.as_token(Some(ADMIN_TOKEN), Method::GET, &format!("/assets/{id}"), None).await, 403, "FORBIDDEN", "a deleted file");
}

#[tokio::test]
async fn cut_and_oversized_uploads_leave_nothing_in_the_bucket() {
    use tokio::io::AsyncWriteExt;
    let app = env();
    let rows = |name: &'static str| async move { app.sql(&format!("SELECT count(*)::text FROM cdapi.files WHERE filename_download = '{name}'")).await };
    // A client that announces 15 MB, sends 7 MB (more than one part is already in the bucket's
    // multipart upload) and goes away.
    let addr = app.rest_url.trim_start_matches("http://").to_owned();
    let mut sock = tokio::net::TcpStream::connect(&addr).await.expect("connect");
    let head = format!(
        "POST /files HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {ADMIN_TOKEN}\r\nContent-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: 15000000\r\n\r\n\
         --XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"dropped.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    );
    sock.write_all(head.as_bytes()).await.expect("head");
    sock.write_all(&bytes(7_000_000, 2)).await.expect("part of the file");
    sock.flush().await.expect("flush");
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    drop(sock);
    // Past FILES_MAX_UPLOAD_SIZE: 413 once the limit is crossed (parts were stored by then).
    let (status, body) = upload(app, "big.bin", bytes(MAX_UPLOAD + 1, 3)).await;
    assert_eq!((status, body["errors"][0]["extensions"]["code"].clone()), (413, json!("CONTENT_TOO_LARGE")), "{body}");
    // (The other test's file may be there: only temporary objects count.)
    let traces = || async {
        let (objects, open) = bucket_state(app).await;
        let temporary: Vec<String> = objects.into_iter().filter(|k| k.starts_with(".incoming")).collect();
        (rows("dropped.bin").await, rows("big.bin").await, temporary, open)
    };
    let clean = (json!(0), json!(0), Vec::<String>::new(), Vec::<String>::new());
    let mut left = traces().await;
    for _ in 0..100 {
        if left == clean {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        left = traces().await;
    }
    assert_eq!(left, clean, "the cut and the refused uploads leave no row, no object, no open upload");
}
