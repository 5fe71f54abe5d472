//! The realtime benchmark's load (`bench/realtime`, docs/realtime.md), against a running system.
//!
//! usage: realtime-load idle WS_URL TOKEN CONNECTIONS HOLD_S
//!   opens CONNECTIONS WebSockets (token in the handshake), each subscribed to `tags`, holds
//!   them HOLD_S seconds and prints `connections <n> failed <m>` once all are subscribed.
//! usage: realtime-load latency WS_URL REST_URL TOKEN SUBSCRIBERS WRITES_PER_S DURATION_S
//!   SUBSCRIBERS subscribe to `tags` (name starting `bench-`); WRITES_PER_S inserts a second
//!   through REST for DURATION_S, each naming its send time; prints
//!   `deliveries <n> expected <m> p50_ms <x> p99_ms <y> max_ms <z>` (commit-to-delivery, measured
//!   from before the write's request to each subscriber's receipt).

use futures_util::{SinkExt as _, StreamExt as _};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_tungstenite::tungstenite::Message;

fn now_us() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros()).unwrap_or(0)
}

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A connection subscribed to `tags` (`bench-` names), after its `init`.
async fn subscriber(ws_url: &str, token: &str) -> Option<Socket> {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("{ws_url}?access_token={token}")).await.ok()?;
    let sub = serde_json::json!({"type": "subscribe", "collection": "tags", "query": {"fields": ["name"], "filter": {"name": {"_starts_with": "bench-"}}}, "uid": "b"});
    ws.send(Message::text(sub.to_string())).await.ok()?;
    // The init, within 30 s; an error message (e.g. FORBIDDEN) counts as a failed subscriber.
    let until = tokio::time::Instant::now() + Duration::from_secs(30);
    while let Ok(Some(Ok(m))) = tokio::time::timeout_at(until, ws.next()).await {
        if let Message::Text(t) = m {
            if t.as_str().contains("\"init\"") {
                return Some(ws);
            }
            if t.as_str().contains("\"status\":\"error\"") {
                eprintln!("subscribe failed: {}", t.as_str());
                return None;
            }
        }
    }
    None
}

async fn idle(args: &[String]) {
    let (ws_url, token) = (args[0].clone(), args[1].clone());
    let n: usize = args[2].parse().unwrap_or(1000);
    let hold: u64 = args[3].parse().unwrap_or(10);
    let mut sockets = Vec::with_capacity(n);
    let mut failed = 0;
    for chunk in (0..n).collect::<Vec<_>>().chunks(200) {
        let opened = futures_util::future::join_all(chunk.iter().map(|_| subscriber(&ws_url, &token))).await;
        for s in opened {
            match s {
                Some(s) => sockets.push(s),
                None => failed += 1,
            }
        }
    }
    println!("connections {} failed {failed}", sockets.len());
    // Held open (answering pings) until the caller has measured.
    let until = tokio::time::Instant::now() + Duration::from_secs(hold);
    let keep = sockets.into_iter().map(|mut ws| async move {
        while let Ok(Some(Ok(m))) = tokio::time::timeout_at(until, ws.next()).await {
            if let Message::Text(t) = m
                && t.as_str().contains("\"ping\"")
            {
                let _ = ws.send(Message::text("{\"type\":\"pong\"}")).await;
            }
        }
    });
    futures_util::future::join_all(keep).await;
}

async fn latency(args: &[String]) {
    let (ws_url, rest_url, token) = (args[0].clone(), args[1].clone(), args[2].clone());
    let subscribers: usize = args[3].parse().unwrap_or(1000);
    let rate: u64 = args[4].parse().unwrap_or(100);
    let seconds: u64 = args[5].parse().unwrap_or(10);
    let mut sockets = Vec::new();
    for chunk in (0..subscribers).collect::<Vec<_>>().chunks(200) {
        sockets.extend(futures_util::future::join_all(chunk.iter().map(|_| subscriber(&ws_url, &token))).await.into_iter().flatten());
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u128>();
    let end = tokio::time::Instant::now() + Duration::from_secs(seconds + 5);
    for mut ws in sockets.drain(..) {
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Ok(Some(Ok(m))) = tokio::time::timeout_at(end, ws.next()).await {
                if let Message::Text(t) = m {
                    let text = t.as_str();
                    if text.contains("\"ping\"") {
                        let _ = ws.send(Message::text("{\"type\":\"pong\"}")).await;
                    } else if let Some(start) = text.split("bench-").nth(1).and_then(|r| r.split('"').next()).and_then(|s| s.parse::<u128>().ok()) {
                        let _ = tx.send(now_us().saturating_sub(start));
                    }
                }
            }
        });
    }
    drop(tx);
    let client = e2e_tests::http_client().build().unwrap_or_default();
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate.max(1)));
    let writes = rate * seconds;
    for _ in 0..writes {
        tick.tick().await;
        let body = serde_json::json!({"name": format!("bench-{}", now_us())});
        let c = client.clone();
        let url = format!("{rest_url}/items/tags");
        let token = token.clone();
        tokio::spawn(async move {
            let _ = c.post(url).bearer_auth(token).json(&body).send().await;
        });
    }
    let mut all = Vec::new();
    while let Some(us) = rx.recv().await {
        all.push(us);
    }
    all.sort_unstable();
    let pct = |p: f64| all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1))).map_or(0.0, |us| *us as f64 / 1000.0);
    println!(
        "deliveries {} expected {} p50_ms {:.2} p99_ms {:.2} max_ms {:.2}",
        all.len(),
        writes as usize * subscribers,
        pct(0.50),
        pct(0.99),
        all.last().map_or(0.0, |us| *us as f64 / 1000.0)
    );
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("idle") if args.len() >= 5 => idle(&args[1..]).await,
        Some("latency") if args.len() >= 7 => latency(&args[1..]).await,
        _ => eprintln!("usage: realtime-load idle WS_URL TOKEN CONNECTIONS HOLD_S | latency WS_URL REST_URL TOKEN SUBSCRIBERS WRITES_PER_S DURATION_S"),
    }
}
