//! The differential conformance machinery (docs/directus-compatibility.md "The differential suite"): the same request sent to our edge and to
//! the real Directus, both answers normalised the documented way and compared as bytes.
//!
//! Normalisations (docs/directus-compatibility.md, "The differential suite"), and nothing else:
//! 1. JSON is re-written compactly with its key order kept; numbers are compared as values
//!    (`2` and `2.0` are one JSON number).
//! 2. Strings that are UUIDs become `<uuid>` (user, role and policy keys are random on each side).
//! 3. Values of `access_token` / `refresh_token` become `<token>`.
//! 4. In an error body (`{"errors": [...]}`), each `message`, `extensions.reason` and
//!    `extensions.errors[].message` (GraphQL validation) becomes `<text>`: the wording is free;
//!    the status, the codes, the other extensions and the error locations are compared.
//! 5. Headers: only the media type of `Content-Type` is compared.

use crate::http_client;
use reqwest::Method;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::fmt::Write as _;

/// A JSON document with its object keys in the order they were written.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A number, as its value.
    Number(f64),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Json>),
    /// An object, keys in document order.
    Object(Vec<(String, Json)>),
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
                Ok(Json::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
                Ok(Json::Number(n as f64))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
                Ok(Json::Number(n as f64))
            }
            fn visit_f64<E>(self, n: f64) -> Result<Json, E> {
                Ok(Json::Number(n))
            }
            fn visit_str<E>(self, s: &str) -> Result<Json, E> {
                Ok(Json::String(s.to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Json, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(Json::Array(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Json, A::Error> {
                let mut v = Vec::new();
                while let Some((k, x)) = a.next_entry::<String, Json>()? {
                    v.push((k, x));
                }
                Ok(Json::Object(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl Json {
    /// Compact JSON text, keys in order; whole numbers without a fraction.
    pub fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) if n.fract() == 0.0 && n.abs() < 1e15 => {
                let _ = write!(out, "{}", *n as i64);
            }
            Json::Number(n) => {
                let _ = write!(out, "{n}");
            }
            Json::String(s) => out.push_str(&serde_json::to_string(s).unwrap_or_default()),
            Json::Array(v) => {
                out.push('[');
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    x.write(out);
                }
                out.push(']');
            }
            Json::Object(v) => {
                out.push('{');
                for (i, (k, x)) in v.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(k).unwrap_or_default());
                    out.push(':');
                    x.write(out);
                }
                out.push('}');
            }
        }
    }

    fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        match self {
            Json::Object(v) => v.iter_mut().find(|(k, _)| k == key).map(|(_, x)| x),
            _ => None,
        }
    }
}

fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36 && b.iter().enumerate().all(|(i, c)| if [8, 13, 18, 23].contains(&i) { *c == b'-' } else { c.is_ascii_hexdigit() })
}

/// Normalisations 2 and 3, everywhere in the document.
fn mask(j: &mut Json) {
    match j {
        Json::String(s) if is_uuid(s) => *s = "<uuid>".into(),
        Json::Array(v) => v.iter_mut().for_each(mask),
        Json::Object(v) => {
            for (k, x) in v.iter_mut() {
                if (k == "access_token" || k == "refresh_token") && matches!(x, Json::String(_)) {
                    *x = Json::String("<token>".into());
                } else {
                    mask(x);
                }
            }
        }
        _ => {}
    }
}

/// Normalisation 4.
fn mask_error_text(j: &mut Json) {
    if let Some(Json::Array(errors)) = j.get_mut("errors") {
        for e in errors {
            if let Some(m) = e.get_mut("message") {
                *m = Json::String("<text>".into());
            }
            if let Some(r) = e.get_mut("extensions").and_then(|x| x.get_mut("reason")) {
                *r = Json::String("<text>".into());
            }
            // GraphQL validation errors listed inside the one GRAPHQL_VALIDATION error.
            if let Some(Json::Array(inner)) = e.get_mut("extensions").and_then(|x| x.get_mut("errors")) {
                for i in inner {
                    if let Some(m) = i.get_mut("message") {
                        *m = Json::String("<text>".into());
                    }
                }
            }
        }
    }
}

/// The normalised form of a body: JSON re-written (normalisations 1–4), other text as is.
pub fn normalise(body: &str) -> String {
    match serde_json::from_str::<Json>(body) {
        Ok(mut j) => {
            mask(&mut j);
            mask_error_text(&mut j);
            let mut out = String::new();
            j.write(&mut out);
            out
        }
        Err(_) => body.to_owned(),
    }
}

/// Who sends a request.
#[derive(Debug, Clone)]
pub enum Auth {
    /// Each side's static admin token.
    Admin,
    /// No credentials.
    Public,
    /// This token to us, that one to Directus.
    Tokens(String, String),
}

/// A request, sent alike to both.
#[derive(Debug, Clone)]
pub struct Req {
    /// Method.
    pub method: Method,
    /// Path and query, e.g. `/items/articles?limit=2`.
    pub path: String,
    /// Body: (content type, bytes).
    pub body: Option<(String, String)>,
    /// Credentials.
    pub auth: Auth,
}

impl Req {
    /// `GET path` as the admin.
    pub fn get(path: &str) -> Req {
        Req { method: Method::GET, path: path.into(), body: None, auth: Auth::Admin }
    }
    /// `method path` with a JSON body, as the admin.
    pub fn json(method: Method, path: &str, body: Value) -> Req {
        Req { method, path: path.into(), body: Some(("application/json".into(), body.to_string())), auth: Auth::Admin }
    }
    /// A GraphQL POST to `endpoint` (`/graphql` or `/graphql/system`), as the admin.
    pub fn graphql(endpoint: &str, query: &str) -> Req {
        Req::json(Method::POST, endpoint, serde_json::json!({ "query": query }))
    }
    /// The same request with other credentials.
    pub fn auth(mut self, auth: Auth) -> Req {
        self.auth = auth;
        self
    }
}

/// One side's answer.
#[derive(Debug, Clone)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// Media type of Content-Type (lowercase, no parameters), `""` when absent.
    pub media_type: String,
    /// The body as received.
    pub body: String,
    /// The body normalised.
    pub normalised: String,
    /// The `Set-Cookie` header values.
    pub cookies: Vec<String>,
}

impl Answer {
    /// The body as `serde_json::Value` (`Null` when not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
    fn line(&self) -> String {
        format!("{} {} {}", self.status, self.media_type, self.normalised)
    }
}

/// One compared request.
#[derive(Debug)]
pub struct Outcome {
    /// What the case checks.
    pub label: String,
    /// The deviation key it is expected to show (`None`: identical answers).
    pub deviation: Option<&'static str>,
    /// Our answer, normalised.
    pub ours: String,
    /// Directus's answer, normalised.
    pub theirs: String,
}

impl Outcome {
    /// Whether the case is as expected: identical, or differing where a deviation is declared.
    pub fn as_expected(&self) -> bool {
        (self.ours == self.theirs) == self.deviation.is_none()
    }
}

/// Both servers and what was compared so far.
pub struct Differential {
    ours: (String, String),
    theirs: (String, String),
    client: reqwest::Client,
    /// Every comparison, in order.
    pub outcomes: Vec<Outcome>,
}

impl Differential {
    /// `ours` and `theirs` are (base URL, admin token).
    pub fn new(ours: (String, String), theirs: (String, String)) -> Differential {
        let client = http_client().build().unwrap_or_else(|e| panic!("http client: {e}"));
        Differential { ours, theirs, client, outcomes: Vec::new() }
    }

    async fn send(&self, side: &(String, String), token: Option<&str>, req: &Req) -> Answer {
        let mut r = self.client.request(req.method.clone(), format!("{}{}", side.0, req.path));
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        if let Some((ct, b)) = &req.body {
            r = r.header("content-type", ct).body(b.clone());
        }
        let res = r.send().await.unwrap_or_else(|e| panic!("{} {}{}: {e}", req.method, side.0, req.path));
        let status = res.status().as_u16();
        let cookies = res.headers().get_all("set-cookie").iter().filter_map(|v| v.to_str().ok()).map(str::to_owned).collect();
        let media_type = res
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
            .unwrap_or_default();
        let body = res.text().await.unwrap_or_default();
        let normalised = normalise(&body);
        Answer { status, media_type, body, normalised, cookies }
    }

    /// Sends `ours` to us and `theirs` to Directus (in that order) and returns both answers
    /// without recording anything.
    pub async fn both(&self, ours: &Req, theirs: &Req) -> (Answer, Answer) {
        let token = |req: &Req, mine: bool| match &req.auth {
            Auth::Admin => Some(if mine { self.ours.1.clone() } else { self.theirs.1.clone() }),
            Auth::Public => None,
            Auth::Tokens(o, t) => Some(if mine { o.clone() } else { t.clone() }),
        };
        let o = self.send(&self.ours, token(ours, true).as_deref(), ours).await;
        let t = self.send(&self.theirs, token(theirs, false).as_deref(), theirs).await;
        (o, t)
    }

    /// As [`Differential::check`] for a request that carries each side's own values (a refresh
    /// token): `ours` goes to us, `theirs` to Directus.
    pub async fn pair(&mut self, label: &str, ours: Req, theirs: Req) -> (Answer, Answer) {
        self.record_pair(label, None, ours, theirs).await
    }

    /// [`Differential::pair`] for a case that differs on purpose (see [`Differential::deviates`]).
    pub async fn pair_deviates(&mut self, label: &str, deviation: &'static str, ours: Req, theirs: Req) -> (Answer, Answer) {
        self.record_pair(label, Some(deviation), ours, theirs).await
    }

    async fn record_pair(&mut self, label: &str, deviation: Option<&'static str>, ours: Req, theirs: Req) -> (Answer, Answer) {
        let (o, t) = self.both(&ours, &theirs).await;
        let label = format!("{label}: {} {}", ours.method, ours.path);
        self.outcomes.push(Outcome { label, deviation, ours: o.line(), theirs: t.line() });
        (o, t)
    }

    /// Sends `req` to both and records whether the answers are identical after normalisation.
    pub async fn check(&mut self, label: &str, req: Req) -> (Answer, Answer) {
        self.record(label, None, req).await
    }

    /// As [`Differential::check`], for a case that differs on purpose: `deviation` names the
    /// row of the deviations table in docs/directus-compatibility.md.
    pub async fn deviates(&mut self, label: &str, deviation: &'static str, req: Req) -> (Answer, Answer) {
        self.record(label, Some(deviation), req).await
    }

    async fn record(&mut self, label: &str, deviation: Option<&'static str>, req: Req) -> (Answer, Answer) {
        self.record_pair(label, deviation, req.clone(), req).await
    }

    /// The report: every case not as expected, with both answers (cut to 600 bytes).
    pub fn failures(&self) -> String {
        let cut = |s: &str| s.chars().take(600).collect::<String>();
        let mut out = String::new();
        for o in self.outcomes.iter().filter(|o| !o.as_expected()) {
            let why = match o.deviation {
                None => "differs".to_owned(),
                Some(d) => format!("declared deviation `{d}` no longer differs"),
            };
            let _ = writeln!(out, "- {} ({why})\n    ours:     {}\n    directus: {}", o.label, cut(&o.ours), cut(&o.theirs));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation_keeps_order_and_masks_only_what_is_documented() {
        let a = normalise(r#"{"b":2.0,"a":"123e4567-e89b-12d3-a456-426614174000","access_token":"x","n":[1.5,null]}"#);
        assert_eq!(a, r#"{"b":2,"a":"<uuid>","access_token":"<token>","n":[1.5,null]}"#);
        let e = normalise(r#"{"errors":[{"message":"No.","extensions":{"code":"FORBIDDEN","reason":"r","field":"f"}}]}"#);
        assert_eq!(e, r#"{"errors":[{"message":"<text>","extensions":{"code":"FORBIDDEN","reason":"<text>","field":"f"}}]}"#);
        assert_ne!(normalise(r#"{"a":1,"b":2}"#), normalise(r#"{"b":2,"a":1}"#), "key order counts");
        assert_ne!(normalise(r#"{"a":"1"}"#), normalise(r#"{"a":1}"#), "types count");
        assert_eq!(normalise("pong"), "pong");
    }
}
