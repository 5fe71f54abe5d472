//! The query engine beyond the basics (docs/what-works.md): deep, alias, functions, dynamic variables,
//! aggregate and groupBy — REST and gRPC against SQL ground truth on Pagila.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use cdapi_proto::v1::items_service_client::ItemsServiceClient;
use cdapi_proto::v1::{AggregateCall, AggregateFunction, Query, ReadRequest};
use e2e_tests::api::Api;
use e2e_tests::{ADMIN_TOKEN, Dataset, app, assert_error, column};
use serde_json::{Value, json};

#[tokio::test]
async fn deep_filters_sorts_and_limits_nested_lists() {
    let app = app(Dataset::Pagila);
    let r = app
        .get(
            "/items/film?fields=film_id,actors.actor_id.last_name&filter[film_id][_lte]=3&sort=film_id\
         &deep[actors][_filter][actor_id][last_name][_starts_with]=D&deep[actors][_sort]=-actor_id.last_name&deep[actors][_limit]=2",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    for film in r.body["data"].as_array().expect("array") {
        let id = film["film_id"].as_i64().expect("id");
        let truth = app
            .sql(&format!(
                "SELECT coalesce(json_agg(n), '[]')::text FROM (SELECT a.last_name AS n FROM film_actor fa JOIN actor a USING (actor_id) \
                 WHERE fa.film_id = {id} AND a.last_name LIKE 'D%' ORDER BY a.last_name DESC, fa.actor_id, fa.film_id LIMIT 2) x"
            ))
            .await;
        let names: Vec<Value> = film["actors"].as_array().expect("actors").iter().map(|a| a["actor_id"]["last_name"].clone()).collect();
        assert_eq!(Value::Array(names), truth, "film {id}");
    }
    // JSON form, and deep on the key list (`*`) too
    let r = app.get("/items/film/1?fields=actors&deep={\"actors\":{\"_limit\":3,\"_sort\":\"-actor_id\"}}").await;
    let truth = app
        .sql("SELECT json_agg(k)::text FROM (SELECT actor_id || ',' || film_id AS k FROM film_actor WHERE film_id = 1 ORDER BY actor_id DESC LIMIT 3) x")
        .await;
    assert_eq!(r.body["data"]["actors"], truth);
}

#[tokio::test]
async fn alias_reads_one_relation_twice_with_different_deep() {
    let app = app(Dataset::Pagila);
    let r = app
        .get(
            "/items/film/1?fields=title,name,first2.actor_id.first_name,last1.actor_id.first_name\
         &alias[name]=title&alias[first2]=actors&alias[last1]=actors\
         &deep[first2][_limit]=2&deep[first2][_sort]=actor_id&deep[last1][_limit]=1&deep[last1][_sort]=-actor_id",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["name"], r.body["data"]["title"]);
    let first2 = app.sql("SELECT json_agg(json_build_object('actor_id', json_build_object('first_name', first_name)))::text FROM (SELECT a.first_name FROM film_actor fa JOIN actor a USING (actor_id) WHERE film_id = 1 ORDER BY fa.actor_id LIMIT 2) x").await;
    let last1 = app.sql("SELECT json_agg(json_build_object('actor_id', json_build_object('first_name', first_name)))::text FROM (SELECT a.first_name FROM film_actor fa JOIN actor a USING (actor_id) WHERE film_id = 1 ORDER BY fa.actor_id DESC LIMIT 1) x").await;
    assert_eq!(r.body["data"]["first2"], first2);
    assert_eq!(r.body["data"]["last1"], last1);
}

#[tokio::test]
async fn functions_in_fields_filter_and_sort() {
    let app = app(Dataset::Pagila);
    let r = app
        .get(
            "/items/rental?fields=rental_id,year(rental_date),month(rental_date),weekday(rental_date),hour(rental_date)\
         &filter[month(rental_date)][_eq]=6&filter[weekday(rental_date)][_eq]=0&sort=-hour(rental_date),rental_id&limit=5",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let truth = app.sql("SELECT json_agg(json_build_object('rental_id', rental_id, 'rental_date_year', y::text, 'rental_date_month', m::text, 'rental_date_weekday', d::text, 'rental_date_hour', h::text))::text FROM (\
         SELECT rental_id, extract(year FROM rental_date AT TIME ZONE 'UTC')::int8 y, extract(month FROM rental_date AT TIME ZONE 'UTC')::int8 m, \
         extract(dow FROM rental_date AT TIME ZONE 'UTC')::int8 d, extract(hour FROM rental_date AT TIME ZONE 'UTC')::int8 h FROM rental \
         WHERE extract(month FROM rental_date AT TIME ZONE 'UTC') = 6 AND extract(dow FROM rental_date AT TIME ZONE 'UTC') = 0 ORDER BY h DESC, rental_id LIMIT 5) x",
    )
    .await;
    assert_eq!(r.body["data"], truth);
    // count() of an O2M, filtered and sorted on
    let r = app.get("/items/film?fields=film_id,count(actors)&filter[count(actors)][_gte]=13&sort=-count(actors),film_id").await;
    let truth = app.sql("SELECT json_agg(json_build_object('film_id', film_id, 'actors_count', n::text) ORDER BY n DESC, film_id)::text FROM (SELECT film_id, count(*) n FROM film_actor GROUP BY film_id HAVING count(*) >= 13) x",
    )
    .await;
    assert_eq!(r.body["data"], truth);
}

#[tokio::test]
async fn dynamic_now_variable() {
    let app = app(Dataset::Pagila);
    // Pagila's rentals are in 2022: all are older than a day ago, none is newer than 100 years ago… minus 100 years.
    let r = app.get("/items/rental?aggregate[count]=*&filter[rental_date][_lt]=$NOW(-1 day)").await;
    let all = app.sql("SELECT to_json(count(*)::text)::text FROM rental").await;
    assert_eq!(r.body["data"][0]["count"], all, "{}", r.body);
    let r = app.get("/items/rental?aggregate[count]=*&filter[rental_date][_gt]=$NOW").await;
    assert_eq!(r.body["data"][0]["count"], json!("0"));
    let r = app.get("/items/rental?aggregate[count]=*&filter[rental_date][_gt]=$NOW(-100 years)").await;
    assert_eq!(r.body["data"][0]["count"], all);
}

#[tokio::test]
async fn aggregate_and_group_by_match_sql() {
    let app = app(Dataset::Pagila);
    let r = app
        .get(
            "/items/film?aggregate[count]=film_id&aggregate[sum]=length&aggregate[avg]=rental_rate&aggregate[max]=length\
         &groupBy[]=rating&filter[length][_gt]=60&sort=-rating",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let truth = app
        .sql(
            "SELECT json_agg(json_build_object('rating', rating, 'count', json_build_object('film_id', c::text), 'sum', json_build_object('length', s::text), \
         'avg', json_build_object('rental_rate', a), 'max', json_build_object('length', m)) ORDER BY rating DESC)::text FROM (\
         SELECT rating, count(film_id) c, sum(length) s, avg(rental_rate)::text a, max(length) m FROM film WHERE length > 60 GROUP BY rating) x",
        )
        .await;
    assert_eq!(r.body["data"], truth);
    // groupBy through an M2O path and a function
    let r = app.get("/items/rental?aggregate[count]=*&groupBy[]=staff_id.first_name&groupBy[]=month(rental_date)").await;
    let truth = app.sql("SELECT json_agg(json_build_object('staff_id.first_name', n, 'rental_date_month', m::text, 'count', c::text) ORDER BY n, m)::text FROM (\
         SELECT s.first_name n, extract(month FROM r.rental_date AT TIME ZONE 'UTC')::int8 m, count(*) c FROM rental r LEFT JOIN staff s USING (staff_id) GROUP BY 1, 2) x",
    )
    .await;
    assert_eq!(r.body["data"], truth);
    // no groupBy: one row
    let r = app.get("/items/payment?aggregate[sum]=amount&aggregate[countDistinct]=customer_id").await;
    let truth = app.sql("SELECT json_build_array(json_build_object('sum', json_build_object('amount', sum(amount)::text), 'countDistinct', json_build_object('customer_id', count(DISTINCT customer_id)::text)))::text FROM payment").await;
    assert_eq!(r.body["data"], truth);
}

#[tokio::test]
async fn having_filters_groups_on_their_results() {
    let app = app(Dataset::Pagila);
    let r = app.get("/items/payment?aggregate[count]=*&aggregate[sum]=amount&groupBy[]=customer_id&having[count][_gte]=40&having[sum][amount][_gt]=150&sort=customer_id",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let truth = app.sql("SELECT coalesce(json_agg(json_build_object('customer_id', customer_id, 'count', c::text, 'sum', json_build_object('amount', s::text)) ORDER BY customer_id), '[]')::text          FROM (SELECT customer_id, count(*) c, sum(amount) s FROM payment GROUP BY customer_id HAVING count(*) >= 40 AND sum(amount) > 150) x",
    )
    .await;
    assert!(truth.as_array().is_some_and(|a| !a.is_empty()));
    assert_eq!(r.body["data"], truth);
    let r = app.get("/items/payment?aggregate[count]=*&groupBy[]=staff_id&having={\"avg\":{\"amount\":{\"_gt\":1}}}").await;
    assert_eq!(r.status, 400, "having on an aggregate not requested: {}", r.body);
    let r = app.get("/items/payment?having[count][_gt]=1").await;
    assert_eq!(r.status, 400, "having without aggregate: {}", r.body);
    // The filters' operator table: operands are checked against the result's type, and every
    // filter operator applies with the filters' meaning (`_neq: null` is IS NOT NULL).
    let r = app.get("/items/payment?aggregate[count]=*&groupBy[]=staff_id&having[count][_gt]=many").await;
    assert_error(&r, 400, "INVALID_QUERY", "a count compared with a word");
    let r = app
        .get("/items/payment?aggregate[sum]=amount&groupBy[]=customer_id&having[sum][amount][_nbetween]=0,150&having[sum][amount][_neq]=null&sort=customer_id")
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let truth = app.sql("SELECT coalesce(json_agg(json_build_object('customer_id', customer_id, 'sum', json_build_object('amount', s::text)) ORDER BY customer_id), '[]')::text \
         FROM (SELECT customer_id, sum(amount) s FROM payment GROUP BY customer_id HAVING sum(amount) NOT BETWEEN 0 AND 150 AND sum(amount) IS NOT NULL ORDER BY customer_id LIMIT 100) x",
    )
    .await;
    assert!(truth.as_array().is_some_and(|a| !a.is_empty()));
    assert_eq!(r.body["data"], truth);
}

#[tokio::test]
async fn aggregate_over_grpc_equals_rest() {
    let app = app(Dataset::Pagila);
    let mut items = ItemsServiceClient::connect(app.grpc_url.clone()).await.expect("connect");
    let mut req = tonic::Request::new(ReadRequest {
        collection: "film".into(),
        key: None,
        query: Some(Query {
            aggregate: vec![AggregateCall { function: AggregateFunction::Count as i32, fields: vec!["*".into()] }],
            group_by: e2e_tests::paths(&["rating"]),
            ..Default::default()
        }),
    });
    req.metadata_mut().insert("authorization", format!("Bearer {ADMIN_TOKEN}").parse().expect("header"));
    let res = items.read(req).await.expect("Read with aggregate").into_inner();
    let grpc: Value = serde_json::from_slice(&res.data).expect("json");
    let rest = app.get("/items/film?aggregate[count]=*&groupBy[]=rating").await;
    assert_eq!(grpc, rest.body["data"]);
    assert_eq!(column(&grpc, "rating").len(), 5);
}
