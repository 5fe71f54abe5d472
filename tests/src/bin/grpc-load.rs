//! A small closed-loop gRPC load generator for the benchmark (`bench/run`), since wrk speaks
//! only HTTP/1.1: CONNS concurrent callers share one HTTP/2 channel to core-service and repeat
//! one read for DURATION_S seconds (after a 1 s warm-up).
//!
//! usage: grpc-load URL TOKEN CONNS DURATION_S COLLECTION QUERY_JSON [KEY]
//! prints: `req/s p50_ms p99_ms errors`

use cdapi_proto::v1::items_service_client::ItemsServiceClient;
use cdapi_proto::v1::{Query, ReadRequest};
use query_language::query_json::query_from_json;
use std::time::{Duration, Instant};

#[derive(Clone)]
struct Case {
    collection: String,
    query: Query,
    key: Option<String>,
    token: String,
}

async fn call(client: &mut ItemsServiceClient<tonic::transport::Channel>, case: &Case) -> bool {
    let auth: Result<tonic::metadata::MetadataValue<_>, _> = format!("Bearer {}", case.token).parse();
    let Ok(auth) = auth else { return false };
    let mut req = tonic::Request::new(ReadRequest { collection: case.collection.clone(), key: case.key.clone(), query: Some(case.query.clone()) });
    req.metadata_mut().insert("authorization", auth);
    client.read(req).await.is_ok()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 7 {
        return Err("usage: grpc-load URL TOKEN CONNS DURATION_S COLLECTION QUERY_JSON [KEY]".into());
    }
    let conns: usize = args[3].parse()?;
    let duration = Duration::from_secs(args[4].parse()?);
    let obj: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&args[6])?;
    let case = Case { collection: args[5].clone(), query: query_from_json(&obj).map_err(|e| e.message)?, key: args.get(7).cloned(), token: args[2].clone() };
    let channel = tonic::transport::Endpoint::from_shared(args[1].clone())?.tcp_nodelay(true).connect().await?;
    let client = ItemsServiceClient::new(channel).max_decoding_message_size(usize::MAX);
    // warm-up
    let warm_until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < warm_until {
        call(&mut client.clone(), &case).await;
    }
    let until = Instant::now() + duration;
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let (mut client, case) = (client.clone(), case.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut errors = 0u64;
            while Instant::now() < until {
                let t = Instant::now();
                if call(&mut client, &case).await {
                    lat.push(t.elapsed().as_micros() as u64);
                } else {
                    errors += 1;
                }
            }
            (lat, errors)
        }));
    }
    let mut all = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (lat, e) = t.await?;
        all.extend(lat);
        errors += e;
    }
    all.sort_unstable();
    let pct = |p: f64| all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1))).copied().unwrap_or(0) as f64 / 1000.0;
    println!("{:.2} {:.2} {:.2} {errors}", all.len() as f64 / duration.as_secs_f64(), pct(0.50), pct(0.99));
    Ok(())
}
