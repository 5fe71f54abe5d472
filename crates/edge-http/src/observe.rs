//! What the edges record per request for metrics: the route template of a path, so that ids,
//! collections and unknown paths do not each become a time series.

/// Counts one answered request in the process's metrics under its route template (see
/// [`route_template`]), with its latency since `started`.
pub fn record(path: &str, method: &http::Method, status: http::StatusCode, started: std::time::Instant) {
    service_runtime::metrics::global().observe_http(&route_template(path), method.as_str(), status.as_u16(), started.elapsed());
}

/// Path segments kept as written; any other segment after the first becomes `:id` (after
/// `items`, `:collection`).
const WORDS: &[&str] = &[
    "me", "tfa", "generate", "enable", "disable", "login", "refresh", "logout", "password", "request", "reset", "callback",
    "providers", "system", "specs", "graphql", "ping", "health", "info", "oas", "save", "compare", "promote",
];

/// Top-level paths the edges serve; anything else is `other`.
const ROOTS: &[&str] = &["items", "users", "roles", "permissions", "versions", "auth", "server", "graphql"];

/// The route template of a request path, e.g. `/items/articles/5` → `/items/:collection/:id`,
/// `/auth/login/github` → `/auth/login/:id`, `/nope` → `other`. At most 5 segments.
pub fn route_template(path: &str) -> String {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let Some(root) = segments.first() else { return "/".to_owned() };
    if !ROOTS.contains(root) || segments.len() > 5 {
        return "other".to_owned();
    }
    let mut out = format!("/{root}");
    for (i, s) in segments.iter().enumerate().skip(1) {
        out.push('/');
        if *root == "items" && i == 1 {
            out.push_str(":collection");
        } else if WORDS.contains(s) {
            out.push_str(s);
        } else {
            out.push_str(":id");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::route_template;

    #[test]
    fn ids_and_collections_become_placeholders() {
        assert_eq!(route_template("/items/articles/5"), "/items/:collection/:id");
        assert_eq!(route_template("/items/articles"), "/items/:collection");
        assert_eq!(route_template("/users/me/tfa/enable"), "/users/me/tfa/enable");
        assert_eq!(route_template("/auth/login/github/callback"), "/auth/login/:id/callback");
        assert_eq!(route_template("/graphql/system"), "/graphql/system");
        assert_eq!(route_template("/"), "/");
        assert_eq!(route_template("/wp-admin/x"), "other");
    }
}
