//! Migration 0008 (Directus 11 access model) on a database holding role-based permissions made
//! before it: every role gets one policy with its rows and flags, the public's rows go to the
//! public policy, a user's own admin flag survives as an access row, and nothing grants more
//! than before. Needs TEST_DATABASE_ADMIN_URL (deploy/local/test sets it).

use sqlx::{Connection, PgConnection};

const PUBLIC_POLICY: &str = "abf8a154-5b1c-4a46-ac9c-7300570f4f17";

async fn scalar(conn: &mut PgConnection, sql: &str) -> String {
    sqlx::query_scalar::<_, Option<String>>(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_one(conn)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .unwrap_or_default()
}

#[tokio::test]
async fn role_rows_become_one_policy_per_role() {
    let admin_url = std::env::var("TEST_DATABASE_ADMIN_URL").expect("TEST_DATABASE_ADMIN_URL (a Postgres superuser URL)");
    let db = format!("cdapi_policies_migration_{}", std::process::id());
    let mut admin = PgConnection::connect(&admin_url).await.expect("admin connection");
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {db}"))).execute(&mut admin).await.expect("drop");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {db}"))).execute(&mut admin).await.expect("create");
    let (base, _) = admin_url.rsplit_once('/').expect("a URL with a database");
    let url = format!("{base}/{db}");

    // The system tables as they were before policies, with data of every kind the migration moves.
    let mut conn = PgConnection::connect(&url).await.expect("connect");
    sqlx::query("SET client_min_messages TO warning").execute(&mut conn).await.expect("set");
    sqlx::query("CREATE SCHEMA cdapi").execute(&mut conn).await.expect("schema");
    sqlx::query("SET search_path TO cdapi").execute(&mut conn).await.expect("path");
    sqlx::migrate!("./migrations").run_to(7, &mut conn).await.expect("migrations 1-7");
    for sql in [
        "INSERT INTO roles (id, name, ip_access, app_access) VALUES ('00000000-0000-4000-8000-0000000000a1', 'Editors', '{10.0.0.0/8}', true)",
        "INSERT INTO users (id, email, role) VALUES ('00000000-0000-4000-8000-0000000000b1', 'editor@example.com', '00000000-0000-4000-8000-0000000000a1')",
        "INSERT INTO users (id, email, admin_access) VALUES ('00000000-0000-4000-8000-0000000000b2', 'root@example.com', true)",
        "INSERT INTO permissions (role, collection, action, fields) VALUES ('00000000-0000-4000-8000-0000000000a1', 'articles', 'read', '{*}')",
        "INSERT INTO permissions (role, collection, action, fields) VALUES ('00000000-0000-4000-8000-0000000000a1', 'articles', 'update', '{title}')",
        "INSERT INTO permissions (role, collection, action, fields) VALUES (NULL, 'articles', 'read', '{id,title}')",
    ] {
        sqlx::query(sql).execute(&mut conn).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    conn.close().await.expect("close");

    system_tables::migrate(&url).await.expect("migration 0008");
    let mut conn = PgConnection::connect(&url).await.expect("connect");
    let editors = scalar(
        &mut conn,
        "SELECT p.id::text FROM cdapi.policies p JOIN cdapi.access a ON a.policy = p.id \
         WHERE a.role = '00000000-0000-4000-8000-0000000000a1' AND p.name = 'Editors' AND p.app_access AND NOT p.admin_access \
           AND p.ip_access = '{10.0.0.0/8}'",
    )
    .await;
    assert!(!editors.is_empty(), "the Editors role has a policy with its flags and IP list");
    assert_eq!(scalar(&mut conn, &format!("SELECT count(*)::text FROM cdapi.permissions WHERE policy = '{editors}'")).await, "2");
    assert_eq!(scalar(&mut conn, &format!("SELECT count(*)::text FROM cdapi.permissions WHERE policy = '{PUBLIC_POLICY}'")).await, "1");
    assert_eq!(
        scalar(&mut conn, &format!("SELECT count(*)::text FROM cdapi.access WHERE policy = '{PUBLIC_POLICY}' AND role IS NULL AND \"user\" IS NULL")).await,
        "1",
        "the public policy is attached to the public"
    );
    // The Administrator role (migration 0006) keeps admin access through its policy; the user
    // who had an admin flag of their own gets that policy directly.
    let admin_policy = scalar(
        &mut conn,
        "SELECT p.id::text FROM cdapi.policies p JOIN cdapi.access a ON a.policy = p.id JOIN cdapi.roles r ON r.id = a.role \
         WHERE r.name = 'Administrator' AND p.admin_access",
    )
    .await;
    assert!(!admin_policy.is_empty(), "the Administrator role's policy has admin access");
    assert_eq!(scalar(&mut conn, "SELECT policy::text FROM cdapi.access WHERE \"user\" = '00000000-0000-4000-8000-0000000000b2'").await, admin_policy);
    // Identities read the same access as before: the editor is not admin and has app access;
    // only IP-limited through their role's policy.
    let row: (bool, bool, Vec<String>, Vec<String>) = sqlx::query_as(
        "SELECT bool_or(admin_access), bool_or(app_access), array_agg(id::text), coalesce((SELECT ip_access FROM cdapi.policies WHERE id = $1::uuid), '{}') \
         FROM cdapi.user_policies('00000000-0000-4000-8000-0000000000b1', '00000000-0000-4000-8000-0000000000a1')",
    )
    .bind(&editors)
    .fetch_one(&mut conn)
    .await
    .expect("user_policies");
    assert_eq!(row, (false, true, vec![editors.clone()], vec!["10.0.0.0/8".to_owned()]));
    // The moved columns are gone: one source of truth.
    assert_eq!(
        scalar(
            &mut conn,
            "SELECT count(*)::text FROM information_schema.columns WHERE table_schema = 'cdapi' \
             AND (table_name, column_name) IN (('roles', 'admin_access'), ('roles', 'ip_access'), ('users', 'admin_access'), ('permissions', 'role'))"
        )
        .await,
        "0"
    );
    conn.close().await.expect("close");
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE {db} WITH (FORCE)"))).execute(&mut admin).await.expect("drop");
}
