//! Replacing a file (docs/files.md; Directus's `PATCH /files/:id` with `multipart/form-data`, the
//! Studio's "Replace File"): the item keeps its id and gets the new file, its old blob goes once
//! the change committed, and `/assets/:id/:filename` serves it. From the attacker's side: a role
//! without update rights on that very file (another user's upload, a field list without the
//! file's name and type, read only, the public) replaces nothing, and neither does a file past
//! FILES_MAX_UPLOAD_SIZE: the file and its blob stay as they were.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{eventually, role};
use e2e_tests::{ADMIN_TOKEN, Dataset, Spec, TestApp, blobs, blobs_holding, get_raw, noise, send_file};
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::OnceLock;

/// Largest upload in this environment (FILES_MAX_UPLOAD_SIZE).
const MAX_UPLOAD: usize = 100_000;

fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        e2e_tests::start(Spec {
            dataset: Dataset::DemoWrites,
            name: Some("files_replace".into()),
            core_env: vec![("FILES_MAX_UPLOAD_SIZE".into(), MAX_UPLOAD.to_string())],
            ..Spec::default()
        })
        .unwrap_or_else(|e| panic!("environment: {e:#}"))
    })
}

/// A new file uploaded by `token`; returns its id.
async fn uploaded(app: &TestApp, token: &str, filename: &str, data: Vec<u8>) -> String {
    let (status, body) = send_file(app, Method::POST, "/files", Some(token), &[], filename, "text/plain", data).await;
    assert_eq!(status, 200, "{body}");
    body["data"]["id"].as_str().expect("id").to_owned()
}

/// `PATCH /files/<id>` with `fields` and one file part.
async fn replace(app: &TestApp, token: Option<&str>, id: &str, fields: &[(&str, &str)], filename: &str, mime: &str, data: Vec<u8>) -> (u16, Value) {
    send_file(app, Method::PATCH, &format!("/files/{id}"), token, fields, filename, mime, data).await
}

/// The bytes `/assets/<id>` serves to the admin.
async fn asset(app: &TestApp, id: &str) -> Vec<u8> {
    let (status, _, body) = get_raw(app, &format!("/assets/{id}"), Some(ADMIN_TOKEN), &[]).await;
    assert_eq!(status, 200);
    body
}

/// The file row's blob name.
async fn disk_name(app: &TestApp, id: &str) -> String {
    let v = app.sql(&format!("SELECT to_json(filename_disk)::text FROM cdapi.files WHERE id = '{id}'")).await;
    v.as_str().expect("filename_disk").to_owned()
}

#[tokio::test]
async fn a_file_is_replaced_in_place_and_its_old_blob_goes_after_the_commit() {
    let app = env();
    let first = noise(5_000, 31);
    let id = uploaded(app, ADMIN_TOKEN, "v1.txt", first.clone()).await;
    let old_disk = disk_name(app, &id).await;
    assert_eq!(old_disk, format!("{id}.txt"));

    let second = b"a,b\n1,2\n".to_vec();
    let (status, body) = replace(app, Some(ADMIN_TOKEN), &id, &[("title", "Second version")], "v2.csv", "text/csv", second.clone()).await;
    assert_eq!(status, 200, "{body}");
    let file = &body["data"];
    assert_eq!(file["id"], json!(id), "{file}");
    assert_eq!(
        (file["title"].clone(), file["filename_download"].clone(), file["type"].clone(), file["filesize"].to_string().trim_matches('"').to_owned()),
        (json!("Second version"), json!("v2.csv"), json!("text/csv"), "8".to_owned()),
        "{file}"
    );
    assert_eq!(asset(app, &id).await, second);
    let (status, _, named) = get_raw(app, &format!("/assets/{id}/any-name.csv"), Some(ADMIN_TOKEN), &[]).await;
    assert!(status == 200 && named == second, "/assets/:id/:filename serves the file ({status})");

    // A blob of its own; the old one is removed once the change committed.
    let new_disk = disk_name(app, &id).await;
    assert!(new_disk.starts_with(&format!("{id}-")) && new_disk.ends_with(".csv"), "{new_disk}");
    assert!(blobs(app).contains(&new_disk), "{:?}", blobs(app));
    eventually("the replaced blob is removed", || async { !blobs(app).contains(&old_disk) }).await;

    // Recorded as an update of the item, with the new file's values.
    let path = format!("/revisions?filter[collection][_eq]=directus_files&filter[item][_eq]={id}&sort=id&fields=activity.action,delta");
    let r = app.admin(Method::GET, &path, Value::Null).await;
    let revisions = r.body["data"].as_array().cloned().unwrap_or_default();
    assert_eq!(revisions.len(), 2, "{}", r.body);
    assert_eq!(revisions[1]["activity"]["action"], "update", "{}", r.body);
    assert_eq!(
        (revisions[1]["delta"]["filename_download"].clone(), revisions[1]["delta"]["type"].clone(), revisions[1]["delta"]["title"].clone()),
        (json!("v2.csv"), json!("text/csv"), json!("Second version")),
        "{}",
        r.body
    );
}

#[tokio::test]
async fn replacing_needs_update_rights_on_that_file_and_a_refusal_changes_nothing() {
    let app = env();
    let original = noise(4_000, 41);
    let id = uploaded(app, ADMIN_TOKEN, "owned-by-admin.txt", original.clone()).await;
    let disk = disk_name(app, &id).await;

    let read = json!({"collection": "directus_files", "action": "read", "fields": ["*"]});
    let create = json!({"collection": "directus_files", "action": "create", "fields": ["*"]});
    let own = json!({"uploaded_by": {"_eq": "$CURRENT_USER"}});
    let update_own = json!({"collection": "directus_files", "action": "update", "permissions": own, "fields": ["*"]});
    let title_only = json!({"collection": "directus_files", "action": "update", "fields": ["title"]});
    let (replacer, _, _) = role(app, "Replacers35", json!([read, create, update_own])).await;
    let (titler, _, _) = role(app, "TitleEditors35", json!([read, title_only])).await;
    let (reader, _, _) = role(app, "FileReaders35", json!([read])).await;

    // Their own upload, a role replaces.
    let theirs = uploaded(app, &replacer, "mine.txt", noise(3_000, 42)).await;
    let (status, body) = replace(app, Some(&replacer), &theirs, &[], "mine-2.txt", "text/plain", noise(3_000, 43)).await;
    assert_eq!(status, 200, "{body}");

    let attack = noise(6_000, 44);
    for (token, who) in [
        (Some(replacer.as_str()), "another user's file"),
        (Some(titler.as_str()), "no rights on the name and type"),
        (Some(reader.as_str()), "read only"),
        (None, "the public"),
    ] {
        let (status, body) = replace(app, token, &id, &[("title", "Defaced")], "evil.html", "text/html", attack.clone()).await;
        assert_eq!((status, body["errors"][0]["extensions"]["code"].clone()), (403, json!("FORBIDDEN")), "{who}: {body}");
    }
    for missing in ["00000000-0000-4000-8000-000000000000", "not-a-uuid"] {
        let (status, body) = replace(app, Some(ADMIN_TOKEN), missing, &[], "x.txt", "text/plain", attack.clone()).await;
        assert_eq!(status, 403, "{missing}: {body}");
    }
    let (status, body) = replace(app, Some(ADMIN_TOKEN), &id, &[], "big.bin", "application/octet-stream", noise(MAX_UPLOAD + 1, 45)).await;
    assert_eq!((status, body["errors"][0]["extensions"]["code"].clone()), (413, json!("CONTENT_TOO_LARGE")), "{body}");

    // Two files for one: refused before anything is stored.
    let part = |name: &str| reqwest::multipart::Part::bytes(attack.clone()).file_name(name.to_owned());
    let form = reqwest::multipart::Form::new().part("file", part("a.txt")).part("file", part("b.txt"));
    let client = e2e_tests::http_client().build().expect("client");
    let res = client.patch(format!("{}/files/{id}", app.rest_url)).bearer_auth(ADMIN_TOKEN).multipart(form).send().await.expect("patch");
    assert_eq!(res.status().as_u16(), 400);

    // The file is as it was: its bytes, its row, and no blob holds what was sent.
    assert_eq!(asset(app, &id).await, original);
    assert_eq!(disk_name(app, &id).await, disk);
    let r = app.as_token(Some(ADMIN_TOKEN), Method::GET, &format!("/files/{id}?fields=title,filename_download"), None).await;
    assert_eq!(r.body["data"], json!({"title": "owned-by-admin", "filename_download": "owned-by-admin.txt"}), "{}", r.body);
    assert_eq!(blobs_holding(app, &attack[..64]), Vec::<String>::new());
    let (status, _, got) = get_raw(app, &format!("/assets/{id}/x.txt"), Some(&reader), &[]).await;
    assert!(status == 200 && got == original, "a reader still gets the original ({status})");
}

/// A multipart `PATCH /files/:id` without a file part updates the fields alone, as Directus
/// does (and as a JSON PATCH would): the bytes stay; a role without update rights changes
/// nothing.
#[tokio::test]
async fn a_form_without_a_file_updates_the_fields_alone() {
    let app = env();
    let bytes = noise(2_000, 51);
    let id = uploaded(app, ADMIN_TOKEN, "form.txt", bytes.clone()).await;
    let read = json!({"collection": "directus_files", "action": "read", "fields": ["*"]});
    let (reader, _, _) = role(app, "FormReaders35", json!([read])).await;
    let client = e2e_tests::http_client().build().expect("client");
    let form = || reqwest::multipart::Form::new().text("title", "Renamed by a form").text("description", "no file sent");
    let res = client.patch(format!("{}/files/{id}", app.rest_url)).bearer_auth(&reader).multipart(form()).send().await.expect("patch");
    assert_eq!(res.status().as_u16(), 403, "a reader updated a file's fields");
    let res = client
        .patch(format!("{}/files/{id}?fields=title,description,filesize", app.rest_url))
        .bearer_auth(ADMIN_TOKEN)
        .multipart(form())
        .send()
        .await
        .expect("patch");
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["data"]["title"], "Renamed by a form", "{body}");
    assert_eq!(body["data"]["description"], "no file sent", "{body}");
    assert_eq!(asset(app, &id).await, bytes, "the bytes stay");
}
