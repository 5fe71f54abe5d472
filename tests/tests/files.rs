//! Files and assets (docs/files.md; Directus's `/files`, `/assets`): multipart uploads streamed to
//! storage, file items listed, read, updated and deleted with their blobs, assets streamed with
//! `Range` and `ETag`, a file field nesting like any M2O (REST and GraphQL), the Directus SDK.
//! Failure paths: an upload cut mid-way and one past FILES_MAX_UPLOAD_SIZE leave no row and no
//! blob; from the attacker's side, the public and roles without a grant upload nothing and
//! download only the files they may read, and cannot choose where a blob goes.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{eventually, role};
use e2e_tests::{ADMIN_TOKEN, Dataset, Spec, TestApp, assert_error, exec, gql_data, repo_root, send};
use e2e_tests::{blobs, blobs_holding, get_raw, header_text as header, noise as bytes};
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::OnceLock;

/// Largest upload in this environment (FILES_MAX_UPLOAD_SIZE).
const MAX_UPLOAD: usize = 1_000_000;

fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        e2e_tests::start(Spec {
            dataset: Dataset::DemoWrites,
            name: Some("files".into()),
            core_env: vec![("FILES_MAX_UPLOAD_SIZE".into(), MAX_UPLOAD.to_string())],
            ..Spec::default()
        })
        .unwrap_or_else(|e| panic!("environment: {e:#}"))
    })
}

/// An environment whose transformations run one at a time with one waiting
/// (ASSETS_TRANSFORM_MAX_CONCURRENT, ASSETS_TRANSFORM_MAX_WAITING), or, `hasty`, with an
/// ASSETS_TRANSFORM_TIMEOUT of 1 ms.
fn transform_env(hasty: bool) -> &'static TestApp {
    static APPS: [OnceLock<TestApp>; 2] = [OnceLock::new(), OnceLock::new()];
    APPS[usize::from(hasty)].get_or_init(|| {
        let core_env = if hasty {
            vec![("ASSETS_TRANSFORM_TIMEOUT".into(), "1".into())]
        } else {
            vec![("ASSETS_TRANSFORM_MAX_CONCURRENT".into(), "1".into()), ("ASSETS_TRANSFORM_MAX_WAITING".into(), "1".into())]
        };
        e2e_tests::start(Spec { dataset: Dataset::DemoWrites, name: Some(format!("files_transform_{hasty}")), core_env, ..Spec::default() })
            .unwrap_or_else(|e| panic!("environment: {e:#}"))
    })
}

/// `POST /files` with text `fields` then one file part.
async fn upload(app: &TestApp, token: Option<&str>, fields: &[(&str, &str)], filename: &str, data: Vec<u8>) -> (u16, Value) {
    upload_typed(app, token, fields, filename, "application/octet-stream", data).await
}

/// [`upload`] with the file part's media type.
async fn upload_typed(app: &TestApp, token: Option<&str>, fields: &[(&str, &str)], filename: &str, mime: &str, data: Vec<u8>) -> (u16, Value) {
    e2e_tests::upload_file(app, token, fields, filename, mime, data).await
}

#[tokio::test]
async fn upload_read_download_and_delete() {
    let app = env();
    let data = bytes(300_000, 1);
    let (status, body) = upload(app, Some(ADMIN_TOKEN), &[("title", "Quarterly report"), ("tags", "[\"q3\",\"finance\"]")], "report.bin", data.clone()).await;
    assert_eq!(status, 200, "{body}");
    let file = &body["data"];
    let id = file["id"].as_str().expect("id").to_owned();
    assert_eq!(
        (file["title"].clone(), file["filename_download"].clone(), file["tags"].clone()),
        (json!("Quarterly report"), json!("report.bin"), json!(["q3", "finance"]))
    );
    assert_eq!(file["filesize"].to_string().trim_matches('"'), "300000");
    assert_eq!(file["storage"], "local");
    assert!(blobs(app).contains(&format!("{id}.bin")), "{:?}", blobs(app));
    assert_eq!(std::fs::read(app.storage_dir().join(format!("{id}.bin"))).expect("blob"), data);

    let listed = app.as_token(Some(ADMIN_TOKEN), Method::GET, &format!("/files?filter[id][_eq]={id}&fields=title,type"), None).await;
    assert_eq!(listed.body["data"], json!([{"title": "Quarterly report", "type": "application/octet-stream"}]));

    let (status, h, got) = get_raw(app, &format!("/assets/{id}"), Some(ADMIN_TOKEN), &[]).await;
    assert_eq!(status, 200);
    assert!(got == data, "the asset's bytes are the upload's");
    assert_eq!((header(&h, "content-type"), header(&h, "accept-ranges"), header(&h, "content-length")), ("application/octet-stream", "bytes", "300000"));
    assert!(header(&h, "content-disposition").starts_with("inline; filename=\"report.bin\""));
    let etag = header(&h, "etag").to_owned();
    assert!(etag.starts_with('"') && etag.len() > 2, "{etag}");
    let (status, h, got) = get_raw(app, &format!("/assets/{id}"), Some(ADMIN_TOKEN), &[("range", "bytes=100-199")]).await;
    assert_eq!((status, header(&h, "content-range")), (206, "bytes 100-199/300000"));
    assert!(got == data[100..200], "the range's bytes");
    let (status, _, got) = get_raw(app, &format!("/assets/{id}"), Some(ADMIN_TOKEN), &[("range", "bytes=-10")]).await;
    assert!(status == 206 && got == data[data.len() - 10..], "a suffix range");
    let (status, _, got) = get_raw(app, &format!("/assets/{id}"), Some(ADMIN_TOKEN), &[("if-none-match", &etag)]).await;
    assert!(status == 304 && got.is_empty(), "not modified");
    let r = send(app, Method::GET, &format!("/assets/{id}"), Some(ADMIN_TOKEN), &[("range", "bytes=400000-")], None).await;
    assert_error(&r, 416, "RANGE_NOT_SATISFIABLE", "a range past the end");
    let (_, h, _) = get_raw(app, &format!("/assets/{id}?download"), Some(ADMIN_TOKEN), &[]).await;
    assert!(header(&h, "content-disposition").starts_with("attachment;"));
    let (status, _, got) = get_raw(app, &format!("/assets/{id}?access_token={ADMIN_TOKEN}"), None, &[]).await;
    assert!(status == 200 && got == data, "the token in the query, as <img src> uses it");
    let (status, _, got) = get_raw(app, &format!("/assets/{id}?width=10"), Some(ADMIN_TOKEN), &[]).await;
    assert!(status == 200 && got == data, "not an image: served as stored, as Directus does");

    let r = app.admin(Method::PATCH, &format!("/files/{id}"), json!({"title": "Q3 report"})).await;
    assert_eq!((r.status, r.body["data"]["title"].clone()), (200, json!("Q3 report")), "{}", r.body);

    let r = app.admin(Method::DELETE, &format!("/files/{id}"), json!(null)).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert!(!blobs(app).contains(&format!("{id}.bin")), "the blob goes with its row");
    assert_error(&app.as_token(Some(ADMIN_TOKEN), Method::GET, &format!("/assets/{id}"), None).await, 403, "FORBIDDEN", "a deleted file");
    assert_error(&app.as_token(Some(ADMIN_TOKEN), Method::GET, "/assets/not-a-uuid", None).await, 403, "FORBIDDEN", "no such file");
}

#[tokio::test]
async fn failed_uploads_leave_no_row_and_no_blob() {
    use tokio::io::AsyncWriteExt;
    let app = env();
    // Cut mid-way: the client announces 5 MB, sends 200 KB of the file and goes away. (Other
    // tests upload meanwhile: what this one checks is its own file's traces.)
    let addr = app.rest_url.trim_start_matches("http://").to_owned();
    let mut sock = tokio::net::TcpStream::connect(&addr).await.expect("connect");
    let head = format!(
        "POST /files HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {ADMIN_TOKEN}\r\nContent-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: 5000000\r\n\r\n\
         --XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"cut.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    );
    sock.write_all(head.as_bytes()).await.expect("head");
    sock.write_all(&bytes(200_000, 2)).await.expect("part of the file");
    sock.flush().await.expect("flush");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // The client stops sending (its half of the connection closes before the announced length)
    // and waits for the answer: the body is incomplete, never a whole file.
    sock.shutdown().await.expect("shutdown");
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), tokio::io::AsyncReadExt::read_to_end(&mut sock, &mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 400") || answer.is_empty(), "{answer}");
    // And a client that drops the connection mid-way.
    let mut sock = tokio::net::TcpStream::connect(&addr).await.expect("connect");
    sock.write_all(head.replace("cut.bin", "dropped.bin").as_bytes()).await.expect("head");
    sock.write_all(&bytes(200_000, 9)).await.expect("part of the file");
    sock.flush().await.expect("flush");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    drop(sock);
    // A file's traces: its rows and the blobs (finished or `.incoming`) holding its bytes. Other
    // tests upload meanwhile, so blobs are told apart by content, not by name.
    let traces = |name: &'static str, seed: u64| async move {
        let rows = app.sql(&format!("SELECT count(*)::text FROM cdapi.files WHERE filename_download = '{name}'")).await;
        (rows, blobs_holding(app, &bytes(64, seed)))
    };
    eventually("the cut upload leaves nothing", || async { traces("cut.bin", 2).await == (json!(0), vec![]) }).await;
    eventually("the dropped upload leaves nothing", || async { traces("dropped.bin", 9).await == (json!(0), vec![]) }).await;

    // Past FILES_MAX_UPLOAD_SIZE: 413, nothing kept.
    let (status, body) = upload(app, Some(ADMIN_TOKEN), &[], "big.bin", bytes(MAX_UPLOAD + 1, 3)).await;
    assert_eq!((status, body["errors"][0]["extensions"]["code"].clone()), (413, json!("CONTENT_TOO_LARGE")), "{body}");
    eventually("the refused upload leaves nothing", || async { traces("big.bin", 3).await == (json!(0), vec![]) }).await;
    // A body without a file.
    let client = e2e_tests::http_client().build().expect("client");
    let res = client
        .post(format!("{}/files", app.rest_url))
        .bearer_auth(ADMIN_TOKEN)
        .multipart(reqwest::multipart::Form::new().text("title", "x"))
        .send()
        .await
        .expect("post");
    assert_eq!(res.status().as_u16(), 400);
}

#[tokio::test]
async fn uploads_and_downloads_from_the_attackers_side() {
    let app = env();
    // The public and a role without a grant on files store nothing.
    let (status, _) = upload(app, None, &[], "anon.bin", bytes(1000, 4)).await;
    assert_eq!(status, 403);
    let (reader, _, _) = role(app, "ArticleReaders", json!([{"collection": "articles", "action": "read", "fields": ["id"]}])).await;
    let (status, _) = upload(app, Some(&reader), &[], "reader.bin", bytes(1000, 5)).await;
    assert_eq!(status, 403);
    let refused = app.sql("SELECT count(*)::text FROM cdapi.files WHERE filename_download IN ('anon.bin', 'reader.bin')").await;
    assert_eq!(refused, json!(0), "no row for refused uploads");
    for seed in [4, 5] {
        assert_eq!(blobs_holding(app, &bytes(64, seed)), Vec::<String>::new(), "no blob for refused uploads");
    }

    // A role that uploads and reads its own files only.
    let own = json!({"uploaded_by": {"_eq": "$CURRENT_USER"}});
    let (uploader, uploader_id, _) = role(
        app,
        "Uploaders",
        json!([
            {"collection": "articles", "action": "read", "fields": ["id"]},
            {"collection": "directus_files", "action": "create", "fields": ["title", "description", "tags", "folder"]},
            {"collection": "directus_files", "action": "read", "permissions": own, "fields": ["*"]},
        ]),
    )
    .await;
    // Server-owned fields sent by the client are dropped: the blob's name is the server's.
    let (status, body) = upload(
        app,
        Some(&uploader),
        &[("filename_disk", "../../escape.sh"), ("storage", "elsewhere"), ("uploaded_by", "00000000-0000-0000-0000-000000000000")],
        "../../evil.sh",
        bytes(2000, 6),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let mine = body["data"]["id"].as_str().expect("id").to_owned();
    let row = app
        .sql(&format!("SELECT json_build_object('disk', filename_disk, 'storage', storage, 'by', uploaded_by)::text FROM cdapi.files WHERE id = '{mine}'"))
        .await;
    assert_eq!(row, json!({"disk": format!("{mine}.sh"), "storage": "local", "by": uploader_id}));
    assert!(blobs(app).iter().all(|b| !b.contains("escape")), "{:?}", blobs(app));
    let (status, body) = upload(app, Some(ADMIN_TOKEN), &[("title", "Board minutes")], "minutes.bin", bytes(3000, 7)).await;
    assert_eq!(status, 200);
    let theirs = body["data"]["id"].as_str().expect("id").to_owned();
    assert_eq!(get_raw(app, &format!("/assets/{mine}"), Some(&uploader), &[]).await.0, 200);
    assert_error(&app.as_token(Some(&uploader), Method::GET, &format!("/assets/{theirs}"), None).await, 403, "FORBIDDEN", "another user's file");
    assert_error(&app.as_token(None, Method::GET, &format!("/assets/{theirs}"), None).await, 403, "FORBIDDEN", "the public");
    let listed = app.as_token(Some(&uploader), Method::GET, "/files?fields=id", None).await;
    assert_eq!(listed.body["data"], json!([{"id": mine}]));
    // No delete grant: the file and its blob stay.
    assert_error(&app.as_token(Some(&uploader), Method::DELETE, &format!("/files/{mine}"), None).await, 403, "FORBIDDEN", "delete without a grant");
    assert!(blobs(app).contains(&format!("{mine}.sh")));
}

#[tokio::test]
async fn a_file_field_nests_like_any_m2o() {
    let app = env();
    exec(app, "CREATE TABLE posts (id serial PRIMARY KEY, title text, featured_image uuid REFERENCES cdapi.files (id) ON DELETE SET NULL)").await;
    let (status, body) = upload(app, Some(ADMIN_TOKEN), &[("title", "Cover")], "cover.jpg", bytes(5000, 8)).await;
    assert_eq!(status, 200);
    let id = body["data"]["id"].as_str().expect("id").to_owned();
    eventually("posts is served", || async { app.as_token(Some(ADMIN_TOKEN), Method::GET, "/items/posts", None).await.status == 200 }).await;
    let r = app
        .admin(Method::POST, "/items/posts?fields=title,featured_image.title,featured_image.filename_download", json!({"title": "Hello", "featured_image": id}))
        .await;
    assert_eq!(r.body["data"], json!({"title": "Hello", "featured_image": {"title": "Cover", "filename_download": "cover.jpg"}}), "{}", r.body);
    let g = app.graphql("/graphql", Some(ADMIN_TOKEN), "{ posts { title featured_image { id filesize } } }", json!({})).await;
    assert_eq!(gql_data(&g)["posts"][0]["featured_image"]["id"], json!(id), "{}", g.body);
}

/// The official Directus SDK (18.x, `tests/js/sdk-files.mjs`): uploadFiles, readFiles,
/// readAssetRaw, deleteFile, unchanged.
#[tokio::test]
async fn the_directus_sdk_uploads_and_downloads() {
    let app = env();
    let js = repo_root().join("tests/js");
    let out = std::process::Command::new("node").arg("sdk-files.mjs").arg(&app.rest_url).arg(ADMIN_TOKEN).current_dir(&js).output().expect("node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "node failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert!(report.get("error").is_none(), "{report}");
    assert_eq!(report["uploaded"], json!({"title": "SDK upload", "filename_download": "hello.bin", "type": "application/octet-stream"}));
    assert_eq!(report["listed"], true);
    assert_eq!(report["raw"], "hello from the SDK\n", "{report}");
    assert_eq!(report["after_delete"], "FORBIDDEN");
}

/// A PNG of `w`×`h` with a gradient.
fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| image::Rgb([(x % 256) as u8, (y % 256) as u8, 128]));
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(img).write_to(&mut out, image::ImageFormat::Png).expect("png");
    out.into_inner()
}

/// A PNG whose header claims `w`×`h` and that holds (almost) no pixel data: what an attacker
/// uploads to make a transformation allocate gigabytes.
fn png_header_only(w: u32, h: u32) -> Vec<u8> {
    fn crc32(data: &[u8]) -> u32 {
        let mut crc = 0xffff_ffffu32;
        for &b in data {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
            }
        }
        !crc
    }
    let chunk = |kind: &[u8], data: &[u8]| {
        let mut c = (data.len() as u32).to_be_bytes().to_vec();
        let mut body = kind.to_vec();
        body.extend_from_slice(data);
        c.extend_from_slice(&body);
        c.extend_from_slice(&crc32(&body).to_be_bytes());
        c
    };
    let mut ihdr = w.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    out.extend(chunk(b"IHDR", &ihdr));
    // A few bytes of compressed data (an empty zlib stream): the decoder reaches the pixels'
    // start, where the size is known, and nothing more is there.
    out.extend(chunk(b"IDAT", &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]));
    out.extend(chunk(b"IEND", &[]));
    out
}

#[tokio::test]
async fn images_are_transformed_within_bounds() {
    let app = env();
    let (status, body) = upload_typed(app, Some(ADMIN_TOKEN), &[], "photo.png", "image/png", png(300, 200)).await;
    assert_eq!(status, 200, "{body}");
    let id = body["data"]["id"].as_str().expect("id").to_owned();
    assert_eq!((body["data"]["width"].clone(), body["data"]["height"].clone()), (json!(300), json!(200)), "an image's size is recorded");
    let dims = |bytes: &[u8]| image::load_from_memory(bytes).map(|i| (i.width(), i.height())).expect("an image");
    let (status, h, got) = get_raw(app, &format!("/assets/{id}?width=150"), Some(ADMIN_TOKEN), &[]).await;
    assert_eq!((status, header(&h, "content-type"), dims(&got)), (200, "image/png", (150, 100)), "width alone keeps the proportions");
    let etag = header(&h, "etag").to_owned();
    let (_, _, again) = get_raw(app, &format!("/assets/{id}?width=150"), Some(ADMIN_TOKEN), &[]).await;
    assert!(again == got, "the cached transformation is the same image");
    let (status, _, none) = get_raw(app, &format!("/assets/{id}?width=150"), Some(ADMIN_TOKEN), &[("if-none-match", &etag)]).await;
    assert!(status == 304 && none.is_empty());
    let (_, h, got) = get_raw(app, &format!("/assets/{id}?width=100&height=100&fit=cover&format=jpg&quality=60"), Some(ADMIN_TOKEN), &[]).await;
    assert_eq!((header(&h, "content-type"), dims(&got)), ("image/jpeg", (100, 100)));
    assert_ne!(header(&h, "etag"), etag, "each transformation has its own validator");
    let (_, _, got) = get_raw(app, &format!("/assets/{id}?width=100&height=100&fit=inside&format=webp"), Some(ADMIN_TOKEN), &[]).await;
    assert_eq!(dims(&got), (100, 67));
    let (_, _, got) = get_raw(app, &format!("/assets/{id}?width=1000&withoutEnlargement=true"), Some(ADMIN_TOKEN), &[]).await;
    assert_eq!(dims(&got), (300, 200));
    // AVIF (the `image` crate encodes it, it cannot decode it: the container is checked) and TIFF.
    let (status, h, got) = get_raw(app, &format!("/assets/{id}?width=120&format=avif&quality=50"), Some(ADMIN_TOKEN), &[]).await;
    assert_eq!((status, header(&h, "content-type")), (200, "image/avif"));
    assert!(got.len() > 12 && &got[4..12] == b"ftypavif", "an AVIF file: {:?}", &got[..got.len().min(16)]);
    let (_, h, got) = get_raw(app, &format!("/assets/{id}?width=60&format=tiff"), Some(ADMIN_TOKEN), &[]).await;
    assert_eq!((header(&h, "content-type"), dims(&got)), ("image/tiff", (60, 40)));
    for (query, code) in [
        ("width=0", "INVALID_QUERY"),
        ("width=100000", "INVALID_QUERY"),
        ("fit=stretch", "INVALID_QUERY"),
        ("format=heic", "INVALID_QUERY"),
        ("quality=0", "INVALID_QUERY"),
        ("key=nope", "INVALID_QUERY"),
        ("transforms=[[\"blur\",10]]", "INVALID_QUERY"),
    ] {
        let r = app.as_token(Some(ADMIN_TOKEN), Method::GET, &format!("/assets/{id}?{query}"), None).await;
        assert_error(&r, 400, code, query);
    }
    // A 20,000 × 20,000 image is refused from its header, before a pixel is decoded; the file
    // itself stays downloadable as stored.
    let huge = png_header_only(20_000, 20_000);
    let (status, body) = upload_typed(app, Some(ADMIN_TOKEN), &[], "huge.png", "image/png", huge.clone()).await;
    assert_eq!(status, 200, "{body}");
    let huge_id = body["data"]["id"].as_str().expect("id").to_owned();
    let r = app.as_token(Some(ADMIN_TOKEN), Method::GET, &format!("/assets/{huge_id}?width=400"), None).await;
    assert_error(&r, 400, "ILLEGAL_ASSET_TRANSFORMATION", "a 20000x20000 image");
    let message = r.body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("20000×20000"), "refused for its size, from the header: {message}");
    let (status, _, got) = get_raw(app, &format!("/assets/{huge_id}"), Some(ADMIN_TOKEN), &[]).await;
    assert!(status == 200 && got == huge);
}

/// The gRPC `UploadFile` stream of `messages`, as the admin: the call's outcome.
async fn grpc_upload(app: &TestApp, messages: Vec<cdapi_proto::v1::UploadChunk>) -> Result<cdapi_proto::v1::ItemResponse, tonic::Status> {
    let mut client = cdapi_proto::v1::files_service_client::FilesServiceClient::connect(app.grpc_url.clone()).await.expect("connect");
    let mut req = tonic::Request::new(futures_util::stream::iter(messages));
    req.metadata_mut().insert("authorization", format!("Bearer {ADMIN_TOKEN}").parse().expect("header"));
    client.upload_file(req).await.map(tonic::Response::into_inner)
}

#[tokio::test]
async fn a_stream_that_ends_before_the_end_message_stores_nothing() {
    use cdapi_proto::v1::{UploadChunk, UploadEnd, UploadStart, upload_chunk::Part};
    let app = env();
    // HTTP/2 may end a request stream gracefully when its sender goes away (a client gone
    // mid-way): only the `end` message says the file is whole.
    let start = |name: &str| UploadChunk { part: Some(Part::Start(UploadStart { filename: name.into(), ..Default::default() })) };
    let data = |seed| UploadChunk { part: Some(Part::Data(bytes(70_000, seed).into())) };
    let end = UploadChunk { part: Some(Part::End(UploadEnd {})) };
    let cut = grpc_upload(app, vec![start("truncated.bin"), data(21), data(22)]).await;
    let status = cut.expect_err("a stream without `end` is refused");
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    let after_end = grpc_upload(app, vec![start("after-end.bin"), data(23), end.clone(), data(24)]).await;
    assert!(after_end.is_err(), "nothing may follow `end`");
    let rows = "SELECT count(*)::text FROM cdapi.files WHERE filename_download IN ('truncated.bin', 'after-end.bin')";
    assert_eq!(app.sql(rows).await, json!(0));
    eventually("no blob of either is left", || async { blobs_holding(app, &bytes(64, 21)).is_empty() && blobs_holding(app, &bytes(64, 23)).is_empty() }).await;
    // With `end`, the same stream stores the file.
    let whole = grpc_upload(app, vec![start("whole.bin"), data(25), end]).await.expect("a whole upload");
    let item: Value = serde_json::from_slice(&whole.data).expect("item");
    assert_eq!(item["filesize"].to_string().trim_matches('"'), "70000", "{item}");
}

/// Uploads a 1000 × 1000 PNG as the admin; returns its id.
async fn large_image(app: &TestApp) -> String {
    let (status, body) = upload_typed(app, Some(ADMIN_TOKEN), &[], "large.png", "image/png", png(1000, 1000)).await;
    assert_eq!(status, 200, "{body}");
    body["data"]["id"].as_str().expect("id").to_owned()
}

#[tokio::test]
async fn transformations_past_the_waiting_line_are_refused_at_once() {
    let app = transform_env(false);
    let id = large_image(app).await;
    // Ten different transformations at once: one runs, one waits, the others are refused
    // (ASSETS_TRANSFORM_MAX_WAITING) instead of each holding its source in memory meanwhile.
    let requests = (0..10).map(|i| {
        let path = format!("/assets/{id}?width={}&format=avif", 400 + i);
        tokio::spawn(async move { app.as_token(Some(ADMIN_TOKEN), Method::GET, &path, None).await })
    });
    let mut served = 0;
    let mut refused = 0;
    for r in futures_util::future::join_all(requests).await {
        let r = r.expect("request");
        if r.status == 200 {
            served += 1;
        } else {
            assert_error(&r, 503, "SERVICE_UNAVAILABLE", "a transformation past the line");
            let message = r.body["errors"][0]["message"].as_str().unwrap_or_default();
            assert!(message.contains("ASSETS_TRANSFORM_MAX_WAITING"), "{message}");
            refused += 1;
        }
    }
    assert!(served >= 1 && refused >= 1, "served {served}, refused {refused}");
    // Once the line is empty, a transformation runs again.
    let (status, h, got) = get_raw(app, &format!("/assets/{id}?width=100"), Some(ADMIN_TOKEN), &[]).await;
    assert_eq!((status, header(&h, "content-type")), (200, "image/png"));
    assert!(image::load_from_memory(&got).is_ok());
}

#[tokio::test]
async fn a_transformation_past_its_time_answers_503_and_is_kept_for_the_next_request() {
    let app = transform_env(true);
    let id = large_image(app).await;
    let path = format!("/assets/{id}?width=500&format=avif");
    let r = app.as_token(Some(ADMIN_TOKEN), Method::GET, &path, None).await;
    assert_error(&r, 503, "SERVICE_UNAVAILABLE", "past ASSETS_TRANSFORM_TIMEOUT (1 ms)");
    let message = r.body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("ASSETS_TRANSFORM_TIMEOUT"), "{message}");
    // The transformation went on within its turn, and its image was kept: served from the cache.
    eventually("the transformed image served from the cache", || async {
        let (status, h, got) = get_raw(app, &path, Some(ADMIN_TOKEN), &[]).await;
        status == 200 && header(&h, "content-type") == "image/avif" && got.len() > 12 && &got[4..12] == b"ftypavif"
    })
    .await;
}
