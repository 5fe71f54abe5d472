//! The Directus Data Studio at `/admin`, served as Directus's own server serves it (Directus
//! 11 `SERVE_APP`; docs/operations.md "Data Studio"): the operator points STUDIO_DIR at the
//! `dist/` directory of the `@directus/app` package (BUSL-1.1: never shipped with this project).
//!
//! - `GET /admin` and any `/admin/<path>` that is not a file: `index.html`, with `<base />`
//!   rewritten to `<base href="<PUBLIC_URL path>/admin/" />` (the app takes the API root from
//!   the path before `/admin`), `Cache-Control: no-cache`.
//! - `/admin/<path>` naming a regular file under STUDIO_DIR: the file, its type from its
//!   extension, `Cache-Control: max-age=31536000, immutable` (the app's assets carry content
//!   hashes in their names).
//! - Nothing else: only `GET` and `HEAD`; no directory listings; a path with an empty, `.`- or
//!   `..`-led segment, a backslash or a NUL never reaches the file system (it gets
//!   `index.html`); symbolic links leading out of STUDIO_DIR are not followed out of it.
//!
//! Cost: one file read per request, bounded by the largest file the operator put there.

use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode, header};
use std::path::{Path, PathBuf};
use warp::reply::Response;

/// The Studio's files and its rewritten `index.html`, read at start.
#[derive(Debug, Clone)]
pub struct Studio {
    root: PathBuf,
    index: Bytes,
}

impl Studio {
    /// Reads `dir/index.html` and rewrites its base to `<public path>/admin/` (`public_url` is
    /// PUBLIC_URL; only its path is used). Errors: no readable `index.html` in `dir`.
    pub fn load(dir: &Path, public_url: Option<&str>) -> anyhow::Result<Self> {
        let root = dir.canonicalize().map_err(|e| anyhow::anyhow!("STUDIO_DIR {}: {e}", dir.display()))?;
        let html = std::fs::read_to_string(root.join("index.html"))
            .map_err(|e| anyhow::anyhow!("STUDIO_DIR {} has no readable index.html (the @directus/app dist directory): {e}", dir.display()))?;
        let base = format!("{}/admin/", public_path(public_url));
        let index = html.replacen("<base />", &format!("<base href=\"{}\" />", html_attribute(&base)), 1);
        Ok(Self { root, index: Bytes::from(index) })
    }

    /// Answers `GET`/`HEAD /admin/<rest>` (`rest`: the path segments after `admin`, still
    /// percent-encoded); other methods get 405 with `Allow: GET, HEAD`.
    pub async fn serve(&self, method: &Method, rest: &[&str]) -> Response {
        if method != Method::GET && method != Method::HEAD {
            return edge_http::reply::method_not_allowed(method, "GET, HEAD");
        }
        let file = match self.file_path(rest) {
            Some(path) => read_regular_file(&self.root, &path).await.map(|bytes| (path, bytes)),
            None => None,
        };
        let mut res = match file {
            Some((path, bytes)) => {
                let mime = mime_guess::from_path(&path).first_or_octet_stream();
                let mut res = edge_http::reply::with_body(StatusCode::OK, "application/octet-stream", bytes);
                if let Ok(v) = HeaderValue::from_str(mime.essence_str()) {
                    res.headers_mut().insert(header::CONTENT_TYPE, v);
                }
                res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("max-age=31536000, immutable"));
                res
            }
            None => {
                let mut res = edge_http::reply::with_body(StatusCode::OK, "text/html; charset=utf-8", self.index.clone());
                res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
                res
            }
        };
        res.headers_mut().insert(header::VARY, HeaderValue::from_static("Origin, Cache-Control"));
        if method == Method::HEAD {
            *res.body_mut() = Default::default();
        }
        res
    }

    /// The file a request names, when every segment is a plain name.
    fn file_path(&self, rest: &[&str]) -> Option<PathBuf> {
        let mut path = self.root.clone();
        let mut any = false;
        for raw in rest {
            let seg = percent_encoding::percent_decode_str(raw).decode_utf8().ok()?;
            if seg.is_empty() || seg.starts_with('.') || seg.contains(['/', '\\', '\0']) {
                return None;
            }
            path.push(seg.as_ref());
            any = true;
        }
        any.then_some(path)
    }
}

/// The bytes of `path` when it is a regular file that resolves inside `root`.
async fn read_regular_file(root: &Path, path: &Path) -> Option<Vec<u8>> {
    let real = tokio::fs::canonicalize(path).await.ok()?;
    if !real.starts_with(root) || !tokio::fs::metadata(&real).await.ok()?.is_file() {
        return None;
    }
    tokio::fs::read(&real).await.ok()
}

/// The path of PUBLIC_URL without its trailing slash (`""` for none or a bare origin).
fn public_path(public_url: Option<&str>) -> String {
    let path = public_url.and_then(|u| u.parse::<http::Uri>().ok()).map(|u| u.path().to_owned()).unwrap_or_default();
    path.trim_end_matches('/').to_owned()
}

/// `s` safe inside a double-quoted HTML attribute.
fn html_attribute(s: &str) -> String {
    s.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn studio() -> (tempdir::Dir, Studio) {
        let dir = tempdir::Dir::new();
        std::fs::write(dir.0.join("index.html"), "<html><head><base /></head></html>").unwrap();
        std::fs::create_dir(dir.0.join("assets")).unwrap();
        std::fs::write(dir.0.join("assets").join("a.js"), "x=1").unwrap();
        std::fs::write(dir.0.join(".env"), "SECRET").unwrap();
        let studio = Studio::load(&dir.0, Some("https://cms.example.com/api/")).unwrap();
        (dir, studio)
    }

    mod tempdir {
        /// A fresh directory under the system temp dir, removed on drop.
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new() -> Self {
                let p = std::env::temp_dir().join(format!("cdapi-studio-{}-{:?}", std::process::id(), std::thread::current().id()));
                let _ = std::fs::remove_dir_all(&p);
                std::fs::create_dir_all(&p).unwrap();
                Self(p)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    async fn body(res: Response) -> (String, String, String) {
        use http_body_util::BodyExt;
        let ct = res.headers().get(header::CONTENT_TYPE).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        let cc = res.headers().get(header::CACHE_CONTROL).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        (ct, cc, String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn files_are_served_with_their_type_and_everything_else_is_the_app() {
        let (_dir, studio) = studio();
        let (ct, cc, text) = body(studio.serve(&Method::GET, &["assets", "a.js"]).await).await;
        assert_eq!((ct.as_str(), cc.as_str(), text.as_str()), ("text/javascript", "max-age=31536000, immutable", "x=1"));
        for rest in [&[][..], &["content", "articles"], &["assets"], &[".env"], &["..", "index.html"], &["%2e%2e", "etc"], &["assets%2Fa.js"], &["a%00b"]] {
            let (ct, cc, text) = body(studio.serve(&Method::GET, rest).await).await;
            assert_eq!((ct.as_str(), cc.as_str()), ("text/html; charset=utf-8", "no-cache"), "{rest:?}");
            assert_eq!(text, "<html><head><base href=\"/api/admin/\" /></head></html>", "{rest:?}");
        }
        assert_eq!(studio.serve(&Method::POST, &["x"]).await.status(), StatusCode::METHOD_NOT_ALLOWED);
    }

    #[test]
    fn the_base_is_the_public_path() {
        assert_eq!(public_path(None), "");
        assert_eq!(public_path(Some("http://127.0.0.1:8055")), "");
        assert_eq!(public_path(Some("https://x.example/cms/")), "/cms");
    }
}
