//! GraphQL root fields on `/graphql` and `/graphql/system`: lists with every argument,
//! `_by_id`, `_aggregated`, functions, nested relations, mutations, validation errors (Directus
//! docs "GraphQL").

use e2e_tests::differential::{Differential, Req};

const QUERIES: &[(&str, &str)] = &[
    ("list", "{ articles(limit: 3, sort: [\"id\"]) { id title status rating } }"),
    ("filter", "{ articles(filter: { rating: { _gte: 4 }, status: { _eq: \"draft\" } }, limit: 3, sort: [\"-id\"]) { id rating } }"),
    ("offset page", "{ a: articles(limit: 2, offset: 4) { id } b: articles(limit: 2, page: 3) { id } }"),
    ("search", "{ articles(search: \"deep\", limit: 3) { id title } }"),
    ("dates", "{ articles(filter: { published_at: { _nnull: true } }, limit: 2) { id published_at } }"),
    ("M2O", "{ articles(limit: 2) { id author { id name } } }"),
    ("M2M", "{ articles_by_id(id: 4) { id tags { tags_id { name } } } }"),
    ("O2M with arguments", "{ authors_by_id(id: 3) { name articles(limit: 2, sort: [\"-id\"]) { id title } } }"),
    ("by id", "{ articles_by_id(id: 3) { id title body published_at author { name } } }"),
    ("by id missing", "{ articles_by_id(id: 999999) { id } }"),
    ("functions", "{ articles_by_id(id: 3) { published_at_func { year month week day weekday hour minute second } } }"),
    ("count function", "{ authors(limit: 2) { id articles_func { count } } }"),
    ("aggregated", "{ articles_aggregated { count { id } } }"),
    ("aggregated values", "{ articles_aggregated { sum { rating } avg { rating } min { rating } max { rating } countDistinct { author } } }"),
    ("aggregated groupBy", "{ articles_aggregated(groupBy: [\"status\"], sort: [\"status\"]) { group count { id } } }"),
    ("aggregated filter", "{ articles_aggregated(filter: { rating: { _eq: 5 } }) { count { id } } }"),
    ("relational filter", "{ articles(filter: { author: { name: { _eq: \"Alice Smith\" } } }, limit: 3) { id } }"),
    ("variables of every type", "{ kinds(sort: [\"id\"]) { id label small big dec ratio flag day clock local at doc docb uid } }"),
    ("typename", "{ articles(limit: 1) { __typename id } }"),
    ("unknown field", "{ articles { nope } }"),
    ("unknown collection", "{ nope { id } }"),
    ("syntax error", "{ articles( }"),
];

pub async fn run(d: &mut Differential) {
    for (label, q) in QUERIES {
        d.check(&format!("graphql {label}"), Req::graphql("/graphql", q)).await;
    }
    d.deviates("graphql countAll", "graphql-countall", Req::graphql("/graphql", "{ articles_aggregated { countAll } }")).await;
    let system = [
        ("server_ping", "{ server_ping }"),
        ("auth_login", "mutation { auth_login(email: \"admin@example.com\", password: \"admin-password\") { access_token expires refresh_token } }"),
        ("auth_login wrong password", "mutation { auth_login(email: \"admin@example.com\", password: \"nope\") { access_token } }"),
        ("update_users_me", "mutation { update_users_me(data: { last_name: \"User\" }) { first_name last_name } }"),
        ("users_me", "{ users_me { email first_name last_name } }"),
        ("roles", "{ roles(sort: [\"name\"]) { name } }"),
        ("users", "{ users(sort: [\"email\"]) { email role { name } } }"),
    ];
    for (label, q) in system {
        d.check(&format!("graphql system {label}"), Req::graphql("/graphql/system", q)).await;
    }
    // Variables and operation names.
    let body = serde_json::json!({
        "query": "query Pick($id: ID!, $n: Int) { articles_by_id(id: $id) { id } articles(limit: $n) { id } }",
        "variables": {"id": "7", "n": 2}, "operationName": "Pick"
    });
    d.check("graphql variables", Req::json(reqwest::Method::POST, "/graphql", body)).await;
    d.check("graphql over GET", Req::get("/graphql?query=%7Barticles(limit%3A1)%7Bid%7D%7D")).await;
}

/// Mutations (after the REST writes' checks of the same shapes).
pub async fn mutations(d: &mut Differential) {
    let steps = [
        ("create item", "mutation { create_tags_item(data: { name: \"graphql-one\" }) { id name } }"),
        ("create items", "mutation { create_tags_items(data: [{ name: \"graphql-two\" }, { name: \"graphql-three\" }]) { id name } }"),
        ("update item", "mutation { update_tags_item(id: 31, data: { name: \"graphql-renamed\" }) { id name } }"),
        ("update items", "mutation { update_tags_items(ids: [32, 33], data: { name: \"graphql-batch\" }) { id name } }"),
        (
            "nested create",
            "mutation { create_articles_item(data: { title: \"via graphql\", author: { name: \"GraphQL Author\" } }) { id title author { name } } }",
        ),
        ("delete item", "mutation { delete_tags_item(id: 31) { id } }"),
        ("delete items", "mutation { delete_tags_items(ids: [32, 33]) { ids } }"),
        ("read after", "{ tags(filter: { id: { _gte: 31 } }) { id name } }"),
    ];
    for (label, q) in steps {
        d.check(&format!("graphql mutation {label}"), Req::graphql("/graphql", q)).await;
    }
    // A user made through GraphQL with a password signs in.
    let user = "mutation { create_users_item(data: { email: \"gql@example.com\", password: \"a-password-1\" }) { email } }";
    d.check("graphql system create user", Req::graphql("/graphql/system", user)).await;
    let login = serde_json::json!({"email": "gql@example.com", "password": "a-password-1"});
    d.check("login as the user made by GraphQL", Req::json(reqwest::Method::POST, "/auth/login", login)).await;
}
