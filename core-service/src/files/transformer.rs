//! The engine that runs image transformations ([`super::transform`], docs/files.md): the
//! budgets of the module docs there (ASSETS_TRANSFORM_MAX_CONCURRENT turns, at most
//! ASSETS_TRANSFORM_MAX_WAITING requests waiting for one, ASSETS_TRANSFORM_TIMEOUT per request,
//! a source loaded only once its turn came) and the cache of transformed images
//! (ASSETS_CACHE_MAX_BYTES).

use super::transform::{Transform, TransformSettings, mime, transform};
use bytes::Bytes;
use cdapi_proto::{ApiError, ErrorCode};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A transformed image and its media type.
type Entry = (Bytes, &'static str);

/// Transformed images kept in memory, oldest out first, within a byte budget.
pub struct Cache {
    max: usize,
    inner: Mutex<(HashMap<String, Entry>, VecDeque<String>, usize)>,
}

impl Cache {
    fn new(max: usize) -> Self {
        Self { max, inner: Mutex::new((HashMap::new(), VecDeque::new(), 0)) }
    }

    fn get(&self, key: &str) -> Option<Entry> {
        self.inner.lock().ok()?.0.get(key).cloned()
    }

    fn put(&self, key: String, value: Entry) {
        if value.0.len() > self.max {
            return;
        }
        let Ok(mut g) = self.inner.lock() else { return };
        let (map, order, used) = &mut *g;
        while *used + value.0.len() > self.max {
            let Some(old) = order.pop_front() else { break };
            if let Some(v) = map.remove(&old) {
                *used -= v.0.len();
            }
        }
        *used += value.0.len();
        if let Some(prev) = map.insert(key.clone(), value) {
            *used -= prev.0.len();
        } else {
            order.push_back(key);
        }
    }
}

/// The transformation engine: settings, the concurrency bound and the cache.
pub struct Transformer {
    /// The settings.
    pub settings: TransformSettings,
    /// Turns to run (ASSETS_TRANSFORM_MAX_CONCURRENT); a running transformation's blocking work
    /// holds its turn until it ends, whether or not its request still waits.
    permits: Arc<tokio::sync::Semaphore>,
    /// Requests waiting for a turn (ASSETS_TRANSFORM_MAX_WAITING).
    waiting: AtomicUsize,
    cache: Arc<Cache>,
}

/// One request's place among the waiting ones, given back when dropped.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Transformer {
    /// An engine with `settings`.
    pub fn new(settings: TransformSettings) -> Self {
        Self {
            permits: Arc::new(tokio::sync::Semaphore::new(settings.max_concurrent)),
            waiting: AtomicUsize::new(0),
            cache: Arc::new(Cache::new(settings.cache_bytes)),
            settings,
        }
    }

    /// `source` (of `size` bytes, fetched by `load` only on a cache miss, once the
    /// transformation's turn came) transformed by `t`; returns the bytes and their media type.
    /// `identity`: the file and its ETag (the cache key). Errors: ILLEGAL_ASSET_TRANSFORMATION
    /// (too large, not an image it can decode), SERVICE_UNAVAILABLE (storage; past
    /// ASSETS_TRANSFORM_MAX_WAITING or ASSETS_TRANSFORM_TIMEOUT), INTERNAL_SERVER_ERROR
    /// (encoding).
    pub async fn run<F, Fut>(&self, identity: &str, size: u64, t: &Transform, load: F) -> Result<(Bytes, &'static str), ApiError>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<Bytes, ApiError>> + Send + 'static,
    {
        let key = format!("{identity}|{}", t.key());
        let illegal = |why: String| ApiError::new(ErrorCode::IllegalAssetTransformation, why);
        if let Some(hit) = self.cache.get(&key) {
            return Ok(hit);
        }
        if size > self.settings.max_input_bytes {
            return Err(illegal(format!("The image is larger than {} bytes and is not transformed.", self.settings.max_input_bytes)));
        }
        let deadline = tokio::time::Instant::now() + self.settings.timeout;
        let too_slow = || {
            ApiError::new(
                ErrorCode::ServiceUnavailable,
                format!("The image transformation took longer than {} ms (ASSETS_TRANSFORM_TIMEOUT).", self.settings.timeout.as_millis()),
            )
        };
        // A place in line (or a refusal at once), then the turn.
        let permit = {
            let ahead = self.waiting.fetch_add(1, Ordering::SeqCst);
            let place = Waiting(&self.waiting);
            if ahead >= self.settings.max_waiting.saturating_add(self.available()) {
                return Err(ApiError::new(ErrorCode::ServiceUnavailable, "Too many image transformations are waiting (ASSETS_TRANSFORM_MAX_WAITING)."));
            }
            let permit = tokio::time::timeout_at(deadline, self.permits.clone().acquire_owned()).await.map_err(|_| too_slow())?;
            drop(place);
            permit.map_err(ApiError::internal_because)?
        };
        // Made by another request while this one waited.
        if let Some(hit) = self.cache.get(&key) {
            return Ok(hit);
        }
        // The source and the transformation run in a task of their own that keeps the turn to
        // its end, whether or not its request still waits: a request that gives up frees no
        // turn early, and the image it asked for is cached for the next one.
        let (t2, max, pixels, cache) = (t.clone(), self.settings.max_dimension, self.settings.max_output_pixels, self.cache.clone());
        let work = tokio::spawn(async move {
            let _turn = permit;
            let source = load().await?;
            let made = tokio::task::spawn_blocking(move || transform(&source, &t2, max, pixels)).await.map_err(ApiError::internal_because)?;
            if let Ok((out, format)) = &made {
                cache.put(key, (out.clone(), mime(*format)));
            }
            made
        });
        let (out, format) = tokio::time::timeout_at(deadline, work).await.map_err(|_| too_slow())?.map_err(ApiError::internal_because)??;
        Ok((out, mime(format)))
    }

    /// Turns free now: a request that finds one free does not count as waiting.
    fn available(&self) -> usize {
        self.permits.available_permits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asset_settings::AssetSettings;
    use crate::files::transform::tests::{params, settings};

    #[tokio::test]
    async fn waiting_is_bounded_and_a_source_is_loaded_only_on_its_turn() {
        let engine = Arc::new(Transformer::new(settings()));
        let loads = Arc::new(AtomicUsize::new(0));
        let (release, held) = tokio::sync::oneshot::channel::<()>();
        let t = |w: &str| Transform::parse(&params(&[("width", w)]), &settings(), &AssetSettings::default()).ok().flatten().expect("a transform");
        // The first holds the only turn while its source is "loading".
        let first = {
            let (engine, loads, t) = (engine.clone(), loads.clone(), t("10"));
            tokio::spawn(async move {
                engine
                    .run("a", 10, &t, move || async move {
                        loads.fetch_add(1, Ordering::SeqCst);
                        let _ = held.await;
                        Err::<Bytes, _>(ApiError::new(ErrorCode::ServiceUnavailable, "storage away"))
                    })
                    .await
            })
        };
        while loads.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        // The second waits for its turn, without loading.
        let second = {
            let (engine, loads, t) = (engine.clone(), loads.clone(), t("11"));
            tokio::spawn(async move {
                engine
                    .run("b", 10, &t, move || async move {
                        loads.fetch_add(1, Ordering::SeqCst);
                        Err::<Bytes, _>(ApiError::new(ErrorCode::ServiceUnavailable, "storage away"))
                    })
                    .await
            })
        };
        while engine.waiting.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        // A third finds the line full (ASSETS_TRANSFORM_MAX_WAITING 1): refused at once.
        let third = engine.run("c", 10, &t("12"), || async { Ok(Bytes::new()) }).await.err().map(|e| e.message).unwrap_or_default();
        assert!(third.contains("ASSETS_TRANSFORM_MAX_WAITING"), "{third}");
        assert_eq!(loads.load(Ordering::SeqCst), 1, "only the running one loaded its source");
        let _ = release.send(());
        assert!(first.await.expect("first").is_err());
        assert!(second.await.expect("second").is_err());
        assert_eq!(loads.load(Ordering::SeqCst), 2, "the second loaded once its turn came");
    }

    #[test]
    fn the_cache_keeps_within_its_budget() {
        let c = Cache::new(10);
        c.put("a".into(), (Bytes::from_static(b"123456"), "image/png"));
        c.put("b".into(), (Bytes::from_static(b"1234"), "image/png"));
        c.put("c".into(), (Bytes::from_static(b"12"), "image/png"));
        assert!(c.get("a").is_none() && c.get("b").is_some() && c.get("c").is_some());
        c.put("big".into(), (Bytes::from(vec![0u8; 11]), "image/png"));
        assert!(c.get("big").is_none());
    }
}
