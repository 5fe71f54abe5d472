//! Random interleavings of writes and reads on the demo data, for the property tests of the
//! caches (`tests/result_cache.rs`, `tests/edge_cache.rs`): every cached answer must equal a
//! fresh read of the database.

use crate::{ADMIN_TOKEN, TestApp, send_at};
use reqwest::Method;
use serde_json::{Value, json};

/// A small deterministic generator (xorshift64*), so a failure can be replayed.
pub struct Steps(pub u64);

impl Steps {
    /// A value in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// The reads compared: lists, one item, nested to-one, to-many and many-to-many, counts and
/// aggregates, over the first 30 articles (the ones written). `{A}` is one of the first five.
pub const READS: [&str; 9] = [
    "/items/articles?fields=id,title,status,rating,author.name&filter[id][_lte]=30&sort=id",
    "/items/articles?filter[status][_eq]=published&filter[id][_lte]=30&fields=id,title&sort=-id&meta=total_count,filter_count",
    "/items/articles/{A}?fields=id,title,status,author.name,tags.tags_id.name",
    "/items/articles/{A}?fields=*,comments.body",
    "/items/authors?fields=id,name,articles.id,articles.status&filter[id][_lte]=5&sort=id",
    "/items/articles?aggregate[count]=*&aggregate[sum]=rating&groupBy[]=status&filter[id][_lte]=30&sort=status",
    "/items/tags?fields=id,name,articles.articles_id.title&filter[id][_lte]=5&sort=id",
    "/items/comments?fields=id,body,article.title&filter[article][_lte]=30&sort=id",
    "/items/articles_tags?fields=id,articles_id,tags_id&filter[articles_id][_lte]=30&sort=id",
];

/// One of [`READS`], at random.
pub fn read_path(rng: &mut Steps) -> String {
    READS[rng.below(READS.len() as u64) as usize].replace("{A}", &(1 + rng.below(5)).to_string())
}

/// What the random writes created, for later deletes.
#[derive(Default)]
pub struct Written {
    comments: Vec<i64>,
    links: Vec<i64>,
}

/// One random write as the admin through the edge at `base`; created comments and links are
/// remembered for deletes. Panics when the write fails.
pub async fn write(base: &str, rng: &mut Steps, step: usize, written: &mut Written) {
    let article = 1 + rng.below(30);
    let (comments, links) = (&mut written.comments, &mut written.links);
    let (method, path, body) = match rng.below(9) {
        0 => (Method::PATCH, format!("/items/articles/{article}"), json!({"status": if rng.below(2) == 0 { "draft" } else { "published" }})),
        1 => (Method::PATCH, format!("/items/articles/{article}"), json!({"title": format!("title {step}")})),
        2 => (Method::PATCH, format!("/items/articles/{article}"), json!({"author": 1 + rng.below(8)})),
        3 => (Method::PATCH, format!("/items/authors/{}", 1 + rng.below(5)), json!({"name": format!("author {step}")})),
        4 => (Method::POST, "/items/comments".to_owned(), json!({"article": article, "body": format!("comment {step}")})),
        5 if !comments.is_empty() => (Method::DELETE, format!("/items/comments/{}", comments.remove(rng.below(comments.len() as u64) as usize)), Value::Null),
        6 => (Method::POST, "/items/articles_tags".to_owned(), json!({"articles_id": article, "tags_id": 1 + rng.below(5)})),
        7 if !links.is_empty() => (Method::DELETE, format!("/items/articles_tags/{}", links.remove(rng.below(links.len() as u64) as usize)), Value::Null),
        8 => (Method::PATCH, format!("/items/tags/{}", 1 + rng.below(5)), json!({"name": format!("tag {step}")})),
        _ => (Method::PATCH, "/items/articles".to_owned(), json!({"keys": [article, 1 + rng.below(30)], "data": {"rating": rng.below(6)}})),
    };
    let body = (!body.is_null()).then(|| ("application/json", body.to_string()));
    let r = send_at(base, method.clone(), &path, Some(ADMIN_TOKEN), &[], body).await;
    assert!(r.status == 200 || r.status == 204, "step {step}: {method} {path}: {} {}", r.status, r.body);
    let id = r.body["data"]["id"].as_i64();
    match (path.as_str(), method, id) {
        ("/items/comments", Method::POST, Some(id)) => comments.push(id),
        ("/items/articles_tags", Method::POST, Some(id)) => links.push(id),
        _ => {}
    }
}

/// Compares, over `steps` random steps (writes 3 in 20), each read through edge `read_at(step)`
/// with a fresh one (`Cache-Control: no-store`, which needs CACHE_SKIP_ALLOWED) by the admin,
/// the token `other` and the public; writes go through edge `write_at(step)`. Returns how many
/// reads were compared.
pub async fn compare(app: &TestApp, seed: u64, steps: usize, other: &str, read_at: impl Fn(usize) -> usize, write_at: impl Fn(usize) -> usize) -> u32 {
    let tokens = [Some(ADMIN_TOKEN), Some(other), None];
    let mut rng = Steps(seed);
    let mut written = Written::default();
    let mut compared = 0;
    for step in 0..steps {
        if rng.below(20) < 3 {
            write(&app.rest_urls[write_at(step)], &mut rng, step, &mut written).await;
            continue;
        }
        let path = read_path(&mut rng);
        let token = tokens[rng.below(tokens.len() as u64) as usize];
        let base = &app.rest_urls[read_at(step)];
        let cached = send_at(base, Method::GET, &path, token, &[], None).await;
        let fresh = send_at(base, Method::GET, &path, token, &[("cache-control", "no-store")], None).await;
        assert_eq!((cached.status, &cached.body), (fresh.status, &fresh.body), "step {step}: GET {path} as {token:?}: cached answer differs from a fresh read");
        compared += 1;
    }
    compared
}
