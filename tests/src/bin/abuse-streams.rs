//! The abuse benchmark's second load generator (`bench/abuse`, docs/security.md "Budgets"):
//! attacks that once took the service down with one anonymous client, each for SECONDS while
//! one client keeps making a cheap read:
//! - `graphql12`, `graphql50`: anonymous GraphQL requests of 12 (50) aliased `limit: -1` root
//!   lists, 8 at a time;
//! - `unread`: 50 sockets that ask for a long list and never read;
//! - `filter`: anonymous `SEARCH`es with a 20,000-condition filter, 4 at a time;
//! - `image`: `width=300` and `width=2500` transformations of a 1×6000 PNG, 4 at a time.
//!
//! usage: abuse-streams BASE_URL TOKEN SECONDS LIST_PATH CHEAP_PATH PNG_FILE NAME=PID...
//! prints per attack (key=value lines): the cheap read's p50/p99 during it (ms) and the ratio to
//! the idle p99, the status codes each kind of request got, and the milliseconds from the
//! attack's end until a cheap read and a long list both answer 200; then each process's peak RSS.

use e2e_tests::load::{Statuses, cheap_reads_apart, count, cpu_seconds, machine_busy_seconds, peak_rss_mib, percentile, status_of};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

/// What every attack shares.
struct Bench {
    base: String,
    token: String,
    list_path: String,
    cheap: String,
    client: reqwest::Client,
}

impl Bench {
    /// Milliseconds from now until a cheap read and a long list both answer 200 (at most 60 s).
    async fn recovery_ms(&self) -> u128 {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(60) {
            let cheap = self.client.get(&self.cheap).bearer_auth(&self.token).send().await;
            let list = self.client.get(format!("{}{}", self.base, self.list_path)).bearer_auth(&self.token).send().await;
            let (cheap, list) = (status_of(cheap).await, status_of(list).await);
            if cheap == "200" && list == "200" {
                return started.elapsed().as_millis();
            }
            if started.elapsed() > Duration::from_secs(10) {
                eprintln!("not yet recovered: cheap read {cheap}, long list {list}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        started.elapsed().as_millis()
    }

    /// `attack` repeated by `width` tasks until `until`, each outcome counted under `kind`.
    async fn repeat<F, Fut>(&self, kind: &'static str, width: usize, until: Instant, statuses: &Statuses, attack: F)
    where
        F: Fn(reqwest::Client) -> Fut + Clone + Send + 'static,
        Fut: std::future::Future<Output = Result<reqwest::Response, reqwest::Error>> + Send,
    {
        let tasks: Vec<_> = (0..width)
            .map(|_| {
                let (client, statuses, attack) = (self.client.clone(), statuses.clone(), attack.clone());
                tokio::spawn(async move {
                    while Instant::now() < until {
                        let status = status_of(attack(client.clone()).await).await;
                        count(&statuses, kind, &status);
                    }
                })
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
    }

    /// 50 sockets asking for the long list anonymously, never reading, held until `until`.
    async fn unread(&self, until: Instant, statuses: &Statuses) {
        let addr = self.base.trim_start_matches("http://").to_owned();
        let mut sockets = Vec::new();
        for _ in 0..50 {
            let Ok(addr) = tokio::net::lookup_host(&addr).await.map(|mut a| a.next()) else {
                break;
            };
            let Some(addr) = addr else { break };
            let Ok(socket) = tokio::net::TcpSocket::new_v4() else {
                break;
            };
            let _ = socket.set_recv_buffer_size(4096);
            let Ok(mut stream) = socket.connect(addr).await else {
                count(statuses, "unread", "connect-error");
                continue;
            };
            let request = format!("GET {} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n", self.list_path);
            let _ = stream.write_all(request.as_bytes()).await;
            count(statuses, "unread", "sent");
            sockets.push(stream);
        }
        tokio::time::sleep_until(until.into()).await;
        drop(sockets);
    }
}

fn graphql_lists(aliases: usize) -> String {
    let fields: String = (0..aliases).map(|i| format!("a{i}: articles(limit: -1) {{ id title }} ")).collect();
    serde_json::json!({ "query": format!("{{ {fields} }}") }).to_string()
}

fn huge_filter() -> String {
    let conditions: Vec<_> = (0..20_000).map(|i| serde_json::json!({"title": {"_ncontains": format!("x{i}")}})).collect();
    serde_json::json!({"query": {"filter": {"_and": conditions}, "limit": -1, "fields": ["id"]}}).to_string()
}

/// Uploads the PNG as the admin: its file id.
async fn upload(b: &Bench, png: Vec<u8>) -> Result<String, Box<dyn std::error::Error>> {
    let part = reqwest::multipart::Part::bytes(png).file_name("sliver.png").mime_str("image/png")?;
    let res = b.client.post(format!("{}/files", b.base)).bearer_auth(&b.token).multipart(reqwest::multipart::Form::new().part("file", part)).send().await?;
    let body: serde_json::Value = res.json().await?;
    Ok(body["data"]["id"].as_str().ok_or("the upload answered no id")?.to_owned())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 7 {
        return Err("usage: abuse-streams BASE_URL TOKEN SECONDS LIST_PATH CHEAP_PATH PNG_FILE NAME=PID...".into());
    }
    let base = args[1].trim_end_matches('/').to_owned();
    let b = Bench {
        cheap: format!("{base}{}", args[5]),
        base,
        token: args[2].clone(),
        list_path: args[4].clone(),
        client: reqwest::Client::builder().timeout(Duration::from_secs(60)).build()?,
    };
    let seconds: u64 = args[3].parse()?;
    let image = upload(&b, std::fs::read(&args[6])?).await?;
    let pids: Vec<(String, String)> = args[7..].iter().filter_map(|a| a.split_once('=')).map(|(n, p)| (n.to_owned(), p.to_owned())).collect();

    let idle_statuses: Statuses = Arc::default();
    let idle = cheap_reads_apart(b.cheap.clone(), b.token.clone(), Some(300), Arc::default(), idle_statuses).join().map_err(|_| "the cheap reader panicked")?;
    let idle_p99 = percentile(&idle, 0.99);
    println!("cheap_idle_p50_ms={:.2} cheap_idle_p99_ms={idle_p99:.2}", percentile(&idle, 0.5));

    // ABUSE_ONLY (comma-separated attack names) runs only those attacks.
    let only = std::env::var("ABUSE_ONLY").unwrap_or_default();
    let wanted = |name: &str| only.is_empty() || only.split(',').any(|n| n.trim() == name);
    for attack in ["graphql12", "graphql50", "unread", "filter", "image"].into_iter().filter(|a| wanted(a)) {
        let statuses: Statuses = Arc::default();
        let cpu_before: Vec<f64> = pids.iter().map(|(_, p)| cpu_seconds(p)).collect();
        let busy_before = machine_busy_seconds();
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = cheap_reads_apart(b.cheap.clone(), b.token.clone(), None, stop.clone(), statuses.clone());
        let until = Instant::now() + Duration::from_secs(seconds);
        let graphql = format!("{}/graphql", b.base);
        let search = format!("{}/items/articles", b.base);
        match attack {
            "graphql12" | "graphql50" => {
                let body = graphql_lists(if attack == "graphql12" { 12 } else { 50 });
                b.repeat("graphql", 8, until, &statuses, move |c| c.post(graphql.clone()).header("content-type", "application/json").body(body.clone()).send())
                    .await;
            }
            "unread" => b.unread(until, &statuses).await,
            "filter" => {
                let body = huge_filter();
                let method = reqwest::Method::from_bytes(b"SEARCH")?;
                b.repeat("filter", 4, until, &statuses, move |c| {
                    c.request(method.clone(), search.clone()).header("content-type", "application/json").body(body.clone()).send()
                })
                .await;
            }
            _ => {
                let (narrow, wide) = (format!("{}/assets/{image}?width=300", b.base), format!("{}/assets/{image}?width=2500", b.base));
                let token = b.token.clone();
                let flip = Arc::new(AtomicBool::new(false));
                b.repeat("image", 4, until, &statuses, move |c| {
                    let url = if flip.fetch_xor(true, Ordering::Relaxed) { wide.clone() } else { narrow.clone() };
                    c.get(url).bearer_auth(token.clone()).send()
                })
                .await;
            }
        }
        let recovery = b.recovery_ms().await;
        stop.store(true, Ordering::Relaxed);
        let attacked = sampler.join().map_err(|_| "the cheap reader panicked")?;
        let (a50, a99) = (percentile(&attacked, 0.5), percentile(&attacked, 0.99));
        println!(
            "attack={attack} cheap_p50_ms={a50:.2} cheap_p99_ms={a99:.2} cheap_p99_ratio={:.2} samples={} recovery_ms={recovery}",
            if idle_p99 > 0.0 { a99 / idle_p99 } else { 0.0 },
            attacked.len()
        );
        let cpu: Vec<String> = pids.iter().zip(&cpu_before).map(|((n, p), before)| format!("{n}={:.1}", cpu_seconds(p) - before)).collect();
        println!("attack={attack} cpu_s {} machine_busy={:.1}", cpu.join(" "), machine_busy_seconds() - busy_before);
        if let Ok(m) = statuses.lock() {
            let line: Vec<String> = m.iter().map(|(k, v)| format!("{k}={v}")).collect();
            println!("attack={attack} statuses {}", line.join(" "));
        }
    }
    for (name, pid) in &pids {
        println!("peak_rss_mib {name}={}", peak_rss_mib(pid));
    }
    Ok(())
}
