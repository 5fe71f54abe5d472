//! Trust, from the attacker's side (docs/security.md "Permissions"): each test reproduces one finding (a role taking over the
//! admin, versions read around row permissions, writes by query ignoring `limit`, validation
//! bypassed by spelling, O2M removal without the related grants, a second singleton row, reads
//! without budgets) and fails on the code before the fix. Ends with a permission property test:
//! random roles of several permission rows, random reads and writes, every answer compared with
//! the SQL ground truth computed from the rules.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{eventually, id_of, role};
use e2e_tests::{ADMIN_TOKEN, Dataset, TestApp, app, assert_error, exec};
use reqwest::Method;
use serde_json::{Value, json};

async fn admin_id(app: &TestApp) -> String {
    let r = app.as_token(Some(ADMIN_TOKEN), Method::GET, "/users/me?fields=id", None).await;
    r.body["data"]["id"].as_str().expect("admin id").to_owned()
}

async fn password_hash(app: &TestApp, id: &str) -> Value {
    app.sql(&format!("SELECT to_json(password_hash)::text FROM cdapi.users WHERE id = '{id}'")).await
}

/// Finding 1: a grant of `first_name` on users must not combine with the built-in "own user"
/// rights into a right to set anyone's password, and `*` never covers sensitive user fields.
#[tokio::test]
async fn a_grant_to_edit_names_never_takes_over_another_user() {
    let app = app(Dataset::DemoWrites);
    let (token, me, _) = role(app, "NameEditors", json!([{"collection": "directus_users", "action": "update", "fields": ["first_name"]}])).await;
    let admin = admin_id(app).await;
    let before = password_hash(app, &admin).await;
    let r = app.as_token(Some(&token), Method::PATCH, &format!("/users/{admin}"), Some(json!({"password": "taken-over-123"}))).await;
    assert_error(&r, 403, "FORBIDDEN", "another user's password through a first_name grant");
    assert_eq!(password_hash(app, &admin).await, before, "the admin's password is unchanged");
    let r = app.as_token(Some(&token), Method::PATCH, &format!("/users/{admin}"), Some(json!({"first_name": "Mallory", "password": "taken-over-123"}))).await;
    assert_error(&r, 403, "FORBIDDEN", "a granted field does not carry an ungranted one");
    let r = app.as_token(Some(&token), Method::PATCH, &format!("/users/{admin}"), Some(json!({"first_name": "Renamed"}))).await;
    // Written; the role may not read that user, so the answer has no body (Directus: 204).
    assert_eq!(r.status, 204, "the granted field on another user: {}", r.body);
    assert_eq!(app.sql(&format!("SELECT to_json(first_name)::text FROM cdapi.users WHERE id = '{admin}'")).await, json!("Renamed"));
    // Their own password: the built-in own-user row.
    let mine = password_hash(app, &me).await;
    let r = app.as_token(Some(&token), Method::PATCH, "/users/me", Some(json!({"password": "my-new-password-1"}))).await;
    assert_eq!(r.status, 200, "own password: {}", r.body);
    assert_ne!(password_hash(app, &me).await, mine);

    // `*` on users: names yes, role/email/status/token/policies no.
    let (star, _, _) = role(app, "StarUserEditors", json!([{"collection": "directus_users", "action": "update", "fields": ["*"]}])).await;
    let admin_role = app.sql("SELECT to_json(id)::text FROM cdapi.roles WHERE name = 'Administrator'").await;
    let admin_policy = app.sql("SELECT to_json(policy)::text FROM cdapi.access WHERE role = (SELECT id FROM cdapi.roles WHERE name = 'Administrator')").await;
    let policies = json!([{"policy": admin_policy}]);
    for (field, value) in [
        ("role", admin_role.clone()),
        ("email", json!("mallory@example.com")),
        ("status", json!("suspended")),
        ("token", json!("stolen")),
        ("policies", policies),
    ] {
        let r = app.as_token(Some(&star), Method::PATCH, "/users/me", Some(json!({ field: value }))).await;
        assert_error(&r, 403, "FORBIDDEN", &format!("`*` covering the sensitive field {field}"));
    }
    let r = app.as_token(Some(&star), Method::PATCH, &format!("/users/{admin}"), Some(json!({"last_name": "Changed"}))).await;
    // Written; that user is not readable to the role: no body (Directus: 204).
    assert_eq!(r.status, 204, "a plain field through `*`: {}", r.body);
    assert_eq!(app.sql(&format!("SELECT to_json(last_name)::text FROM cdapi.users WHERE id = '{admin}'")).await, json!("Changed"));
    // Creating an administrator through a create grant of `*`.
    let (creator, _, _) = role(app, "UserCreators", json!([{"collection": "directus_users", "action": "create", "fields": ["*"]}])).await;
    let r = app.as_token(Some(&creator), Method::POST, "/users", Some(json!({"email": "evil@example.com", "role": admin_role}))).await;
    assert_error(&r, 403, "FORBIDDEN", "creating a user in the Administrator role");
}

/// Finding 1, reads: a field only some permission rows grant reads as NULL on items no such
/// row matches, and cannot be filtered or sorted on there.
#[tokio::test]
async fn a_field_is_read_only_where_a_row_granting_it_matches() {
    let app = app(Dataset::DemoWrites);
    let (token, _, _) = role(
        app,
        "SplitReaders",
        json!([
            {"collection": "articles", "action": "read", "permissions": {"status": {"_eq": "published"}}, "fields": ["id", "status", "title", "body"]},
            {"collection": "articles", "action": "read", "permissions": {"status": {"_eq": "draft"}}, "fields": ["id", "status"]},
        ]),
    )
    .await;
    let r = app.as_token(Some(&token), Method::GET, "/items/articles?fields=id,status,title&limit=-1&sort=id", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let truth = app.sql("SELECT coalesce(json_agg(json_build_object('id', id, 'status', status, 'title', CASE WHEN status = 'published' THEN title END) ORDER BY id), '[]')::text \
         FROM articles WHERE status IN ('published', 'draft')",
    )
    .await;
    assert_eq!(r.body["data"], truth, "titles of drafts are hidden, archived articles absent");
    let draft_title = app.sql("SELECT to_json(title)::text FROM articles WHERE status = 'draft' ORDER BY id LIMIT 1").await;
    let q = format!("/items/articles?fields=id&filter={}", json!({"title": {"_eq": draft_title}}));
    let r = app.as_token(Some(&token), Method::GET, &q, None).await;
    assert_eq!(r.body["data"], json!([]), "no filtering on a value the role cannot read: {}", r.body);
    let r = app.as_token(Some(&token), Method::GET, "/items/articles?aggregate[countDistinct]=body&filter[status][_eq]=draft", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"][0]["countDistinct"]["body"], "0", "no counting of hidden values: {}", r.body);
}

/// Finding 2: a version's delta cannot make an unreadable item readable, and versions need read
/// and update rights on their item.
#[tokio::test]
async fn versions_never_read_around_row_permissions() {
    let app = app(Dataset::DemoWrites);
    let published = json!({"status": {"_eq": "published"}});
    let (token, _, _) = role(
        app,
        "VersionReaders",
        json!([
            {"collection": "articles", "action": "read", "permissions": published, "fields": ["*"]},
            {"collection": "directus_versions", "action": "read", "fields": ["*"]},
            {"collection": "directus_versions", "action": "create", "fields": ["*"]},
        ]),
    )
    .await;
    let draft = app.sql("SELECT to_json(min(id))::text FROM articles WHERE status = 'draft'").await;
    let r = app.admin(Method::POST, "/versions", json!({"key": "preview", "name": "Preview", "collection": "articles", "item": draft.to_string()})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let version = id_of(&r.body["data"]);
    let r = app.admin(Method::POST, &format!("/versions/{version}/save"), json!({"status": "published"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    for token in [None, Some(token.as_str())] {
        let r = app.as_token(token, Method::GET, &format!("/items/articles/{draft}"), None).await;
        assert_error(&r, 403, "FORBIDDEN", "the draft itself");
        let r = app.as_token(token, Method::GET, &format!("/items/articles/{draft}?version=preview"), None).await;
        assert_error(&r, 403, "FORBIDDEN", "the draft through a version that publishes it");
    }
    // Creating a version of an item the role cannot read (its hash would leak) or update.
    let r = app.as_token(Some(&token), Method::POST, "/versions", Some(json!({"key": "mine", "collection": "articles", "item": draft.to_string()}))).await;
    assert_error(&r, 403, "FORBIDDEN", "a version of an unreadable item");
    let pub_id = app.sql("SELECT to_json(min(id))::text FROM articles WHERE status = 'published'").await;
    let r = app.as_token(Some(&token), Method::POST, "/versions", Some(json!({"key": "mine", "collection": "articles", "item": pub_id.to_string()}))).await;
    assert_error(&r, 403, "FORBIDDEN", "a version of an item the role cannot update");
    assert_eq!(app.sql("SELECT count(*)::text FROM cdapi.versions WHERE key = 'mine'").await, json!(0));
}

/// Finding 3: update and delete by query write exactly the items the whole query selects.
#[tokio::test]
async fn writes_by_query_honour_limit_sort_offset_and_page() {
    let app = app(Dataset::DemoWrites);
    exec(app, "CREATE TABLE ledger (id serial PRIMARY KEY, kind text NOT NULL, note text)").await;
    exec(app, "INSERT INTO ledger (kind) SELECT 'a' FROM generate_series(1, 50)").await;
    eventually("ledger is served", || async { app.as_token(Some(ADMIN_TOKEN), Method::GET, "/items/ledger?limit=1", None).await.status == 200 }).await;
    let changed =
        |note: &'static str| async move { app.sql(&format!("SELECT coalesce(json_agg(id ORDER BY id), '[]')::text FROM ledger WHERE note = '{note}'")).await };
    let r = app.admin(Method::PATCH, "/items/ledger", json!({"query": {"filter": {"kind": {"_eq": "a"}}, "limit": 1}, "data": {"note": "one"}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(changed("one").await, json!([1]), "limit 1 changes one item");
    let r = app
        .admin(Method::PATCH, "/items/ledger", json!({"query": {"filter": {"kind": {"_eq": "a"}}, "sort": ["-id"], "limit": 2}, "data": {"note": "last"}}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(changed("last").await, json!([49, 50]));
    let r = app.admin(Method::PATCH, "/items/ledger", json!({"query": {"limit": 3, "page": 2}, "data": {"note": "page"}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(changed("page").await, json!([4, 5, 6]));
    let r = app.admin(Method::PATCH, "/items/ledger", json!({"query": {"limit": 2, "offset": 10}, "data": {"note": "offset"}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(changed("offset").await, json!([11, 12]));
    let r = app.admin(Method::DELETE, "/items/ledger", json!({"query": {"filter": {"kind": {"_eq": "a"}}, "sort": ["-id"], "limit": 3}})).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(app.sql("SELECT json_agg(id ORDER BY id DESC)::text FROM (SELECT id FROM ledger ORDER BY id DESC LIMIT 2) x").await, json!([47, 46]));
    assert_eq!(app.sql("SELECT count(*)::text FROM ledger").await, json!(47), "exactly three deleted");
    // Without a limit: every matching item, as before.
    let r = app.admin(Method::PATCH, "/items/ledger", json!({"query": {"filter": {"id": {"_lte": 5}}}, "data": {"note": "all"}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(changed("all").await, json!([1, 2, 3, 4, 5]));
}

/// Finding 4: validation rules see values as Postgres will store them.
#[tokio::test]
async fn validation_cannot_be_bypassed_by_how_a_value_is_spelled() {
    let app = app(Dataset::DemoWrites);
    exec(app, "CREATE TABLE tickets (id serial PRIMARY KEY, title text, rating int, assignee uuid, due date)").await;
    eventually("tickets is served", || async { app.as_token(Some(ADMIN_TOKEN), Method::GET, "/items/tickets?limit=1", None).await.status == 200 }).await;
    let (token, me, _) = role(
        app,
        "TicketWriters",
        json!([{"collection": "tickets", "action": "create", "fields": ["*"],
                "validation": {"rating": {"_lte": 5}, "assignee": {"_neq": "$CURRENT_USER"}, "due": {"_gte": "2024-02-01"}}}]),
    )
    .await;
    let ok = json!({"title": "ok", "rating": 3, "due": "2024-03-01"});
    let post = |body: Value| {
        let token = token.clone();
        async move { app.as_token(Some(&token), Method::POST, "/items/tickets", Some(body)).await }
    };
    let cases = [
        (json!({"rating": 900}), "rating", "lte"),
        (json!({"rating": " 900"}), "rating", "lte"),
        (json!({"rating": "900 "}), "rating", "lte"),
        (json!({"assignee": me.to_uppercase()}), "assignee", "neq"),
        (json!({"assignee": me.clone()}), "assignee", "neq"),
        (json!({"due": "2024-1-5"}), "due", "gte"),
    ];
    for (change, field, kind) in cases {
        let mut body = ok.clone();
        for (k, v) in change.as_object().expect("object") {
            body[k] = v.clone();
        }
        let r = post(body.clone()).await;
        assert_error(&r, 400, "FAILED_VALIDATION", &format!("{body}"));
        assert_eq!(r.body["errors"][0]["extensions"]["field"], field, "{}", r.body);
        assert_eq!(r.body["errors"][0]["extensions"]["type"], kind, "{}", r.body);
    }
    assert_eq!(app.sql("SELECT count(*)::text FROM tickets").await, json!(0), "nothing stored");
    let r = post(ok).await;
    // Stored; the role may not read tickets, so no body (Directus: 204).
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(app.sql("SELECT count(*)::text FROM tickets").await, json!(1));
}

/// A validation rule's condition is planned once per schema snapshot unless it names the
/// caller; a list operator's comma-separated text names the caller too, so the rule is planned
/// for each writer, never once for nobody (whose `$CURRENT_USER` would let anyone through).
#[tokio::test]
async fn a_rule_naming_the_caller_in_a_list_holds_for_each_writer() {
    let app = app(Dataset::DemoWrites);
    exec(app, "CREATE TABLE claims (id serial PRIMARY KEY, owner uuid, note text)").await;
    eventually("claims is served", || async { app.as_token(Some(ADMIN_TOKEN), Method::GET, "/items/claims?limit=1", None).await.status == 200 }).await;
    let rule = json!({"owner": {"_nin": "00000000-0000-0000-0000-000000000001, $CURRENT_USER"}, "note": {"_neq": "x"}});
    let rows = json!([{"collection": "claims", "action": "create", "fields": ["*"], "validation": rule}]);
    let (first, first_id, _) = role(app, "ClaimantsOne", rows.clone()).await;
    let (second, second_id, _) = role(app, "ClaimantsTwo", rows).await;
    let post = |token: String, owner: String| async move {
        app.as_token(Some(&token), Method::POST, "/items/claims", Some(json!({"owner": owner, "note": "n"}))).await
    };
    for _ in 0..2 {
        for (token, me, other) in [(&first, &first_id, &second_id), (&second, &second_id, &first_id)] {
            let r = post(token.clone(), me.clone()).await;
            assert_error(&r, 400, "FAILED_VALIDATION", "claiming for oneself");
            assert_eq!(r.body["errors"][0]["extensions"]["type"], "nin", "{}", r.body);
            let r = post(token.clone(), other.clone()).await;
            assert_eq!(r.status, 204, "claiming for another user: {}", r.body);
        }
    }
    assert_eq!(app.sql("SELECT count(*)::text FROM claims").await, json!(4), "only the claims for others are stored");
}

/// Finding 8: removing items from an O2M changes the related items only under the related
/// collection's grants.
#[tokio::test]
async fn o2m_removal_needs_the_related_grants() {
    let app = app(Dataset::DemoWrites);
    let (token, _, _) = role(
        app,
        "ArticleOnlyEditors",
        json!([
            {"collection": "articles", "action": "read", "fields": ["*"]},
            {"collection": "comments", "action": "read", "fields": ["*"]},
            {"collection": "articles", "action": "update", "fields": ["title", "comments"]},
            {"collection": "comments", "action": "update", "fields": ["body"]},
        ]),
    )
    .await;
    let article = app.sql("SELECT to_json(article)::text FROM comments GROUP BY article HAVING count(*) >= 2 ORDER BY article LIMIT 1").await;
    let before = app.sql(&format!("SELECT json_agg(id ORDER BY id)::text FROM comments WHERE article = {article}")).await;
    let r = app.as_token(Some(&token), Method::PATCH, &format!("/items/articles/{article}"), Some(json!({"comments": []}))).await;
    assert_error(&r, 403, "FORBIDDEN", "unlinking comments without update on comments.article");
    assert_eq!(app.sql(&format!("SELECT json_agg(id ORDER BY id)::text FROM comments WHERE article = {article}")).await, before);
    let r = app.as_token(Some(&token), Method::PATCH, &format!("/items/articles/{article}"), Some(json!({"comments": {"delete": [before[0].clone()]}}))).await;
    assert_error(&r, 403, "FORBIDDEN", "detailed delete without the grant");
    assert_eq!(app.sql(&format!("SELECT json_agg(id ORDER BY id)::text FROM comments WHERE article = {article}")).await, before);
}

/// Finding 10: an update of the singleton outside the caller's update rows is refused; it never
/// inserts a second row.
#[tokio::test]
async fn a_singleton_outside_the_update_rows_is_never_doubled() {
    let app = app(Dataset::DemoWrites);
    let (token, _, _) = role(
        app,
        "SettingsEditors",
        json!([
            {"collection": "settings", "action": "read", "fields": ["*"]},
            {"collection": "settings", "action": "update", "permissions": {"site_name": {"_eq": "another site"}}, "fields": ["*"]},
            {"collection": "settings", "action": "create", "fields": ["*"]},
        ]),
    )
    .await;
    let r = app.as_token(Some(&token), Method::PATCH, "/items/settings", Some(json!({"site_name": "x", "tagline": "hijacked"}))).await;
    assert_error(&r, 403, "FORBIDDEN", "the row is outside the update filter");
    assert_eq!(app.sql("SELECT count(*)::text FROM settings").await, json!(1));
}

/// Finding 7 (the core's part): `limit` has a default maximum, and nested lists that multiply
/// past the row budget are refused before anything runs.
#[tokio::test]
async fn reads_have_row_budgets() {
    let app = app(Dataset::DemoWrites);
    let r = app.as_token(Some(ADMIN_TOKEN), Method::GET, "/items/articles?limit=10001", None).await;
    assert_error(&r, 400, "INVALID_QUERY", "limit over QUERY_LIMIT_MAX");
    let r = app.as_token(Some(ADMIN_TOKEN), Method::GET, "/items/authors?limit=-1&fields=id,articles.id,articles.comments.id", None).await;
    assert_error(&r, 400, "INVALID_QUERY", "nested lists multiplying past RESPONSE_MAX_ROWS");
    let r = app.as_token(Some(ADMIN_TOKEN), Method::GET, "/items/authors?limit=10&fields=id,articles.id,articles.comments.id", None).await;
    assert_eq!(r.status, 200, "a bounded nested read: {}", r.body);
}

/// A tiny deterministic generator (no dependency): xorshift64.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The property: for random roles of 1–3 permission rows on `articles` (a filter on status or
/// rating, a field list), a read returns exactly the SQL ground truth (items some row matches,
/// each field where a row granting it matches, NULL elsewhere), and a write of one field lands
/// exactly when a row granting it (with a passing validation) matches the item.
#[tokio::test]
async fn random_permission_rows_read_and_write_exactly_the_ground_truth() {
    let app = app(Dataset::DemoWrites);
    let fields = ["title", "body", "rating", "word_count"];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..5 {
        let n_rows = 1 + rng.next(3) as usize;
        let mut rows = Vec::new();
        let mut truth_rows: Vec<(String, Vec<&str>)> = Vec::new();
        for _ in 0..n_rows {
            let (filter, sql) = match rng.next(3) {
                0 => {
                    let s = ["draft", "published", "archived"][rng.next(3) as usize];
                    (json!({"status": {"_eq": s}}), format!("status = '{s}'"))
                }
                1 => {
                    let r = 1 + rng.next(5);
                    (json!({"rating": {"_gte": r}}), format!("coalesce(rating >= {r}, false)"))
                }
                _ => (json!({"id": {"_lte": 40 + rng.next(40)}}), String::new()),
            };
            let sql = if sql.is_empty() { format!("id <= {}", filter["id"]["_lte"]) } else { sql };
            let granted: Vec<&str> = fields.iter().copied().filter(|_| rng.next(2) == 0).collect();
            let mut listed: Vec<&str> = vec!["id", "status"];
            listed.extend(&granted);
            rows.push(json!({"collection": "articles", "action": "read", "permissions": filter, "fields": listed}));
            rows.push(json!({"collection": "articles", "action": "update", "permissions": filter, "fields": granted,
                             "validation": {"rating": {"_lte": 4}}}));
            truth_rows.push((sql, granted));
        }
        let (token, _, _) = role(app, &format!("Random{round}"), Value::Array(rows)).await;
        // Reads.
        let visible = truth_rows.iter().map(|(s, _)| format!("({s})")).collect::<Vec<_>>().join(" OR ");
        let mut cols = vec!["'id', id".to_owned(), "'status', status".to_owned()];
        for f in fields {
            let granting: Vec<String> = truth_rows.iter().filter(|(_, g)| g.contains(&f)).map(|(s, _)| format!("({s})")).collect();
            if granting.is_empty() {
                continue;
            }
            cols.push(format!("'{f}', CASE WHEN {} THEN {f} END", granting.join(" OR ")));
        }
        let truth =
            app.sql(&format!("SELECT coalesce(json_agg(json_build_object({}) ORDER BY id), '[]')::text FROM articles WHERE {visible}", cols.join(", "))).await;
        let asked: Vec<&str> = ["id", "status"].into_iter().chain(fields.iter().copied().filter(|f| truth_rows.iter().any(|(_, g)| g.contains(f)))).collect();
        let r = app.as_token(Some(&token), Method::GET, &format!("/items/articles?fields={}&limit=-1&sort=id", asked.join(",")), None).await;
        assert_eq!(r.status, 200, "round {round}: {}", r.body);
        assert_eq!(r.body["data"], truth, "round {round}: rows {truth_rows:?}");
        // Writes: one field on a few items; lands iff a row granting it matches (and the
        // validation rating <= 4 passes).
        for _ in 0..6 {
            let id = 1 + rng.next(80);
            let f = fields[rng.next(fields.len() as u64) as usize];
            let value = if f == "rating" {
                json!(1 + rng.next(6))
            } else if f == "word_count" {
                json!(rng.next(1000))
            } else {
                json!(format!("r{round}-{id}"))
            };
            let granting: Vec<String> = truth_rows.iter().filter(|(_, g)| g.contains(&f)).map(|(s, _)| format!("({s})")).collect();
            let matches = !granting.is_empty()
                && app.sql(&format!("SELECT to_json(coalesce(bool_or({}), false))::text FROM articles WHERE id = {id}", granting.join(" OR "))).await
                    == json!(true);
            let valid = f != "rating" || value.as_u64().is_some_and(|v| v <= 4);
            let before = app.sql(&format!("SELECT to_json({f})::text FROM articles WHERE id = {id}")).await;
            let r = app.as_token(Some(&token), Method::PATCH, &format!("/items/articles/{id}?fields=id"), Some(json!({ f: value }))).await;
            let after = app.sql(&format!("SELECT to_json({f})::text FROM articles WHERE id = {id}")).await;
            if matches && valid {
                assert_eq!(r.status, 200, "round {round}: PATCH {id} {f}={value} should land: {}", r.body);
                assert_eq!(after, value);
            } else {
                assert!(r.status == 403 || r.status == 400, "round {round}: PATCH {id} {f}={value} must not land: {} {}", r.status, r.body);
                assert_eq!(after, before, "round {round}: nothing written");
            }
        }
    }
}

/// An attacker probing which collections exist: for the public role and for a role with rules,
/// a collection that exists but is not granted and one that does not exist answer alike (same
/// status, code and extensions, the name aside), by read, by key, by GraphQL-free write and by
/// delete. Only an admin, who sees every collection anyway, gets the bare FORBIDDEN of an
/// unknown one.
#[tokio::test]
async fn forbidden_collections_do_not_reveal_whether_they_exist() {
    let app = app(Dataset::Demo);
    let fixture = e2e_tests::fixture::demo(app).await;
    let shape = |r: &e2e_tests::Reply, name: &str| {
        let text = r.body.to_string().replace(name, "<collection>");
        (r.status, text)
    };
    for token in [None, Some(fixture.reviewer.as_str())] {
        for (method, path, body) in [
            (Method::GET, "/items/{}", None),
            (Method::GET, "/items/{}/1", None),
            (Method::POST, "/items/{}", Some(json!({"name": "x"}))),
            (Method::DELETE, "/items/{}/1", None),
        ] {
            // `settings` exists in the demo schema; neither role may touch it.
            let existing = app.as_token(token, method.clone(), &path.replace("{}", "settings"), body.clone()).await;
            let missing = app.as_token(token, method.clone(), &path.replace("{}", "no_such_collection"), body.clone()).await;
            assert_eq!(existing.status, 403, "{method} {path} as {token:?}: {}", existing.body);
            assert_eq!(shape(&existing, "settings"), shape(&missing, "no_such_collection"), "{method} {path} as {token:?}");
        }
    }
}
