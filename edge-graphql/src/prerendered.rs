//! Root fields answered as JSON text. async-graphql holds a response as one value tree, and
//! building that tree for a list of items (an ordered map per item, a name per key) and then
//! serialising it cost the edge more than the core's own work. So the fast path
//! ([`crate::fast`]) writes a root field's JSON text straight from the core's reply
//! ([`crate::projection`]) and answers the field with a placeholder: a string holding a random
//! token no data can hold (it starts with a NUL character). Once the response is serialised,
//! [`Prerendered::splice`] puts each text where its placeholder is, over HTTP and WebSocket
//! alike. A placeholder that is no longer in the response (its field nulled) is dropped.

use async_graphql::Value;
use std::sync::Mutex;

/// The texts of one request's root fields (none until the fast path answers one).
#[derive(Default)]
pub struct Prerendered(Mutex<Texts>);

#[derive(Default)]
struct Texts {
    /// The request's token prefix: NUL, a name, 128 random bits in hex; made with the first text.
    prefix: String,
    texts: Vec<String>,
}

impl Prerendered {
    /// Keeps `text` (a JSON value) as the value of one field: the placeholder to answer it with.
    /// `None` when no random token could be made (the ordinary resolvers then answer).
    pub fn add(&self, text: String) -> Option<Value> {
        let mut t = self.0.lock().ok()?;
        if t.prefix.is_empty() {
            t.prefix = format!("\u{0}cdapi-field-{}-", edge_http::random::hex128().ok()?);
        }
        t.texts.push(text);
        Some(Value::String(format!("{}{}", t.prefix, t.texts.len() - 1)))
    }

    /// `body` (a serialised response) with each placeholder replaced by its text.
    pub fn splice(&self, body: String) -> String {
        let Ok(mut t) = self.0.lock() else { return body };
        let Texts { prefix, texts } = &mut *t;
        let mut body = body;
        for (i, text) in texts.drain(..).enumerate() {
            let Ok(quoted) = serde_json::to_string(&format!("{prefix}{i}")) else { continue };
            if let Some(at) = body.find(&quoted) {
                let mut spliced = String::with_capacity(body.len() + text.len());
                spliced.push_str(&body[..at]);
                spliced.push_str(&text);
                spliced.push_str(&body[at + quoted.len()..]);
                body = spliced;
            }
        }
        body
    }
}

#[cfg(test)]
mod tests {
    use super::Prerendered;
    use async_graphql::Value;

    #[test]
    fn placeholders_become_their_texts_and_data_that_looks_alike_stays() -> Result<(), String> {
        let p = Prerendered::default();
        let a = p.add(r#"[{"id":"1"}]"#.to_owned()).ok_or("add")?;
        let b = p.add("null".to_owned()).ok_or("add")?;
        let Value::String(token) = &a else { return Err("a string placeholder".into()) };
        assert!(token.starts_with('\u{0}'));
        // A value that merely names the request's prefix without its number stays as it is.
        let look_alike = token.trim_end_matches(char::is_numeric).to_owned();
        let data = serde_json::json!({"a": a.into_json().map_err(|e| e.to_string())?, "b": b.into_json().map_err(|e| e.to_string())?, "c": look_alike});
        let body = p.splice(serde_json::to_string(&serde_json::json!({"data": data})).map_err(|e| e.to_string())?);
        let parsed: serde_json::Value = serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
        assert_eq!(parsed["data"]["a"], serde_json::json!([{"id": "1"}]));
        assert_eq!(parsed["data"]["b"], serde_json::Value::Null);
        assert_eq!(parsed["data"]["c"], serde_json::json!(look_alike));
        Ok(())
    }
}
