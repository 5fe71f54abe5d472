//! The same query through REST and through gRPC gives the same data (docs/grpc-api.md): each query
//! string is sent to edge-rest, and also parsed with the edge's own parser into the typed Query
//! that an internal caller would send to core-service directly.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use cdapi_proto::v1::ReadRequest;
use cdapi_proto::v1::items_service_client::ItemsServiceClient;
use e2e_tests::api::Api;
use e2e_tests::{ADMIN_TOKEN, Dataset, app};
use query_language::query_json::query_from_json;
use serde_json::Value;

const QUERIES: &[(&str, &str)] = &[
    ("film", "fields=film_id,title,rating&filter[rating][_in]=G,PG&filter[length][_between]=60,90&sort=-length,title&limit=7&meta=*"),
    ("film", "fields=title,language_id.name,actors.actor_id.last_name&deep[actors][_limit]=3&deep[actors][_sort]=-actor_id&limit=3"),
    ("film", "fields=title,count(actors),year(last_update)&filter[count(actors)][_gt]=10&sort=-count(actors)&limit=5"),
    ("customer", "fields=customer_id,email&search=an&filter[active][_eq]=1&page=2&limit=3"),
    ("customer", "fields=customer_id&filter[_or][0][store_id][_eq]=1&filter[_or][1][address_id][city_id][city][_starts_with]=A&limit=10"),
    ("rental", "aggregate[count]=*&aggregate[min]=rental_date&groupBy[]=staff_id&groupBy[]=month(rental_date)"),
    ("payment", "aggregate[sum]=amount&aggregate[avg]=amount&groupBy[]=customer_id.store_id&having[sum][amount][_gt]=30000"),
    ("actor", "fields=a,films&alias[a]=last_name&filter[films][_none][film_id][rating][_eq]=NC-17&limit=4"),
];

#[tokio::test]
async fn rest_and_grpc_agree() {
    let app = app(Dataset::Pagila);
    let mut items = ItemsServiceClient::connect(app.grpc_url.clone()).await.expect("connect");
    for (collection, qs) in QUERIES {
        let rest = app.get(&format!("/items/{collection}?{qs}")).await;
        assert_eq!(rest.status, 200, "{qs}: {}", rest.body);
        let parsed = edge_rest::query_string::parse(qs).expect("parse");
        let query = query_from_json(&parsed.query).expect("query");
        let mut req = tonic::Request::new(ReadRequest { collection: (*collection).into(), key: None, query: Some(query) });
        req.metadata_mut().insert("authorization", format!("Bearer {ADMIN_TOKEN}").parse().expect("header"));
        let res = items.read(req).await.unwrap_or_else(|s| panic!("{qs}: {s:?}")).into_inner();
        let data: Value = serde_json::from_slice(&res.data).expect("json");
        assert_eq!(data, rest.body["data"], "{qs}");
        assert!(data.as_array().is_some_and(|a| !a.is_empty()), "{qs}: empty result proves little");
        if !res.meta.is_empty() {
            let meta: Value = serde_json::from_slice(&res.meta).expect("meta");
            assert_eq!(meta, rest.body["meta"], "{qs}");
        }
    }
}
