//! Image transformations of assets (docs/files.md; Directus's `/assets/:id?width=&height=&fit=&
//! quality=&format=&withoutEnlargement=&key=`), with the `image` crate.
//!
//! Budgets (Directus's setting names where it has them):
//! - ASSETS_TRANSFORM_IMAGE_MAX_DIMENSION (default 6000): a source image wider or taller is
//!   refused (ILLEGAL_ASSET_TRANSFORMATION) from its header, before any pixel is decoded; so is
//!   a requested `width`/`height` above it.
//! - ASSETS_TRANSFORM_MAX_OUTPUT_PIXELS (default 36,000,000, 6000²): the largest image a
//!   transformation makes (the resized image before a `cover` crop, or the output) is computed
//!   from the source's header and the parameters, and a transformation whose image would be
//!   wider or taller than ASSETS_TRANSFORM_IMAGE_MAX_DIMENSION or hold more pixels than this is
//!   refused (ILLEGAL_ASSET_TRANSFORMATION) before any pixel is decoded: `width=300` on a 1×6000
//!   image would otherwise be 300×1,800,000 pixels (2 GiB).
//! - ASSETS_TRANSFORM_MAX_INPUT_BYTES (default 64 MiB): larger sources are refused the same way.
//! - ASSETS_TRANSFORM_MAX_CONCURRENT (default 2): transformations running at once (each on the
//!   blocking pool), each holding at most one source (ASSETS_TRANSFORM_MAX_INPUT_BYTES) in
//!   memory: a source is loaded only once its transformation may run.
//! - ASSETS_TRANSFORM_MAX_WAITING (default 64): transformations waiting for their turn, which
//!   hold nothing but their place; one more is refused at once (SERVICE_UNAVAILABLE, 503, as
//!   Directus answers past its own ASSETS_TRANSFORM_MAX_CONCURRENT).
//! - ASSETS_TRANSFORM_TIMEOUT (Directus's name and default, 7500 ms; a number of milliseconds or
//!   a duration such as `7500ms` or `8s`): the longest a request waits for its turn, the source and the
//!   transformation together; past it, SERVICE_UNAVAILABLE (503). A transformation already
//!   running finishes on its own, within ASSETS_TRANSFORM_MAX_CONCURRENT, and is cached for the
//!   next request.
//! - ASSETS_CACHE_MAX_BYTES (default 64 MiB; 0 = no cache): transformed images kept in memory,
//!   keyed by file, its ETag and the parameters; the oldest go first.
//! - ASSETS_PRESETS (JSON array of `{key, width, height, fit, quality, format,
//!   withoutEnlargement}`): what `?key=` names; an unknown key is INVALID_QUERY.
//!
//! `fit`: `cover` (default: fill the box, cropping), `contain` (inside the box, letterboxed
//! with transparent or white bars), `inside` (inside the box), `outside` (cover the box, no
//! crop). With one of `width`/`height` the other follows the image's proportions. `format`:
//! `jpg`/`jpeg`, `png`, `webp` (lossless), `avif` (`quality` applies; encoded at rav1e speed
//! [`AVIF_SPEED`]: several times the CPU of the others, within the same concurrency bound),
//! `tiff`, `auto`/absent (the source's when it is png or webp, else jpeg). Sources: jpeg, png,
//! webp, tiff. Files that are not images are served as stored, as Directus does.

use crate::asset_settings::AssetSettings;
use bytes::Bytes;
use cdapi_proto::{ApiError, ErrorCode};
use image::{DynamicImage, GenericImageView, ImageFormat, imageops::FilterType};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// The rav1e speed of AVIF output (1 slowest and smallest … 10 fastest): 8 keeps a 400-pixel
/// thumbnail within tens of milliseconds.
pub const AVIF_SPEED: u8 = 8;

/// Transformation settings (see the module docs).
#[derive(Debug, Clone)]
pub struct TransformSettings {
    /// ASSETS_TRANSFORM_IMAGE_MAX_DIMENSION.
    pub max_dimension: u32,
    /// ASSETS_TRANSFORM_MAX_INPUT_BYTES.
    pub max_input_bytes: u64,
    /// ASSETS_TRANSFORM_MAX_OUTPUT_PIXELS.
    pub max_output_pixels: u64,
    /// ASSETS_TRANSFORM_MAX_CONCURRENT.
    pub max_concurrent: usize,
    /// ASSETS_TRANSFORM_MAX_WAITING.
    pub max_waiting: usize,
    /// ASSETS_TRANSFORM_TIMEOUT.
    pub timeout: std::time::Duration,
    /// ASSETS_CACHE_MAX_BYTES.
    pub cache_bytes: usize,
    /// The Studio's `system-*` presets ([`crate::asset_settings::system_presets`]) and ASSETS_PRESETS, by key.
    pub presets: BTreeMap<String, BTreeMap<String, String>>,
}

impl TransformSettings {
    /// Reads the settings. Errors: a value that does not parse.
    pub fn from_env() -> anyhow::Result<Self> {
        let mut presets = crate::asset_settings::system_presets();
        if let Some(text) = service_runtime::env_opt("ASSETS_PRESETS") {
            let list: Vec<serde_json::Map<String, Value>> = serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("ASSETS_PRESETS: {e}"))?;
            presets.extend(crate::asset_settings::parse_presets(&list).map_err(|e| anyhow::anyhow!("ASSETS_PRESETS: {e}"))?);
        }
        Ok(Self {
            max_dimension: service_runtime::env_or("ASSETS_TRANSFORM_IMAGE_MAX_DIMENSION", 6000u32)?,
            max_input_bytes: service_runtime::env_or("ASSETS_TRANSFORM_MAX_INPUT_BYTES", 64u64 << 20)?,
            max_output_pixels: service_runtime::env_or("ASSETS_TRANSFORM_MAX_OUTPUT_PIXELS", 36_000_000u64)?,
            max_concurrent: service_runtime::env_or("ASSETS_TRANSFORM_MAX_CONCURRENT", 2usize)?.max(1),
            max_waiting: service_runtime::env_or("ASSETS_TRANSFORM_MAX_WAITING", 64usize)?,
            timeout: parse_timeout(&service_runtime::env_or("ASSETS_TRANSFORM_TIMEOUT", "7500".to_owned())?)
                .map_err(|e| anyhow::anyhow!("ASSETS_TRANSFORM_TIMEOUT: {e}"))?,
            cache_bytes: service_runtime::env_or("ASSETS_CACHE_MAX_BYTES", 64usize << 20)?,
            presets,
        })
    }
}

/// A timeout as Directus reads one (`ms` notation): a number of milliseconds (`7500`), or a
/// duration with its units (`8s`, `7s 500ms`). Errors: anything else, or zero.
fn parse_timeout(text: &str) -> anyhow::Result<std::time::Duration> {
    let text = text.trim();
    let d = match text.parse::<u64>() {
        Ok(ms) => std::time::Duration::from_millis(ms),
        Err(_) => humantime::parse_duration(text).map_err(|e| anyhow::anyhow!("\"{text}\" is neither milliseconds nor a duration such as 7500ms: {e}"))?,
    };
    anyhow::ensure!(!d.is_zero(), "a timeout of zero");
    Ok(d)
}

/// How the image fills the box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fit {
    Cover,
    Contain,
    Inside,
    Outside,
}

/// A checked transformation request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transform {
    width: Option<u32>,
    height: Option<u32>,
    fit: Fit,
    quality: u8,
    format: Option<ImageFormat>,
    without_enlargement: bool,
}

impl Transform {
    /// The transformation `params` ask for (a preset's under `key`, the others on top), `None`
    /// when they ask for none, as the project's settings allow ([`AssetSettings::expand`]).
    /// Errors: INVALID_QUERY for a bad value, an unknown preset or one the settings refuse.
    pub fn parse(params: &HashMap<String, String>, settings: &TransformSettings, assets: &AssetSettings) -> Result<Option<Self>, ApiError> {
        let p = assets.expand(params, &settings.presets)?;
        if p.is_empty() {
            return Ok(None);
        }
        let bad = |k: &str, v: &str, why: &str| ApiError::invalid_query(format!("\"{k}={v}\": {why}"));
        let size = |k: &str| -> Result<Option<u32>, ApiError> {
            match p.get(k) {
                None => Ok(None),
                Some(v) => match v.parse::<u32>() {
                    Ok(n) if n >= 1 && n <= settings.max_dimension => Ok(Some(n)),
                    _ => Err(bad(k, v, &format!("a whole number from 1 to {}", settings.max_dimension))),
                },
            }
        };
        let fit = match p.get("fit").map(String::as_str) {
            None | Some("cover") => Fit::Cover,
            Some("contain") => Fit::Contain,
            Some("inside") => Fit::Inside,
            Some("outside") => Fit::Outside,
            Some(v) => return Err(bad("fit", v, "one of cover, contain, inside, outside")),
        };
        let quality = match p.get("quality") {
            None => 80,
            Some(v) => match v.parse::<u8>() {
                Ok(q) if (1..=100).contains(&q) => q,
                _ => return Err(bad("quality", v, "a whole number from 1 to 100")),
            },
        };
        let format = match p.get("format").map(String::as_str) {
            None | Some("auto") => None,
            Some("jpg" | "jpeg") => Some(ImageFormat::Jpeg),
            Some("png") => Some(ImageFormat::Png),
            Some("webp") => Some(ImageFormat::WebP),
            Some("avif") => Some(ImageFormat::Avif),
            Some("tiff") => Some(ImageFormat::Tiff),
            Some(v) => return Err(bad("format", v, "one of jpg, jpeg, png, webp, avif, tiff, auto")),
        };
        let without_enlargement = matches!(p.get("withoutEnlargement").map(String::as_str), Some("true" | "1"));
        Ok(Some(Self { width: size("width")?, height: size("height")?, fit, quality, format, without_enlargement }))
    }

    /// A short text of the parameters (cache key, ETag).
    pub fn key(&self) -> String {
        format!("{:?}", self)
    }
}

pub(super) fn mime(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Jpeg => "image/jpeg",
        ImageFormat::Png => "image/png",
        ImageFormat::WebP => "image/webp",
        ImageFormat::Avif => "image/avif",
        ImageFormat::Tiff => "image/tiff",
        _ => "application/octet-stream",
    }
}

/// Decodes, resizes and encodes (blocking). The source's dimensions are read from its header
/// first: past `max` on a side it is refused without decoding a pixel, and so is a
/// transformation whose largest image ([`largest_image`]) is past `max` on a side or holds more
/// than `max_pixels` pixels.
pub(super) fn transform(source: &[u8], t: &Transform, max: u32, max_pixels: u64) -> Result<(Bytes, ImageFormat), ApiError> {
    let illegal = |why: String| ApiError::new(ErrorCode::IllegalAssetTransformation, why);
    let reader = || image::ImageReader::new(std::io::Cursor::new(source)).with_guessed_format().map_err(|e| illegal(format!("Not a readable image: {e}")));
    let r = reader()?;
    let source_format = r.format().ok_or_else(|| illegal("Not an image format that can be transformed".into()))?;
    let (w, h) = r.into_dimensions().map_err(|e| illegal(format!("Not a readable image: {e}")))?;
    if w > max || h > max {
        return Err(illegal(format!("The image is {w}×{h}: larger than {max} on a side (ASSETS_TRANSFORM_IMAGE_MAX_DIMENSION).")));
    }
    let (ow, oh) = largest_image(w, h, t);
    if ow > u64::from(max) || oh > u64::from(max) || ow.saturating_mul(oh) > max_pixels {
        return Err(illegal(format!(
            "The transformation would make a {ow}×{oh} image: over {max} on a side or {max_pixels} pixels (ASSETS_TRANSFORM_IMAGE_MAX_DIMENSION, ASSETS_TRANSFORM_MAX_OUTPUT_PIXELS)."
        )));
    }
    let mut r = reader()?;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(max);
    limits.max_image_height = Some(max);
    limits.max_alloc = Some(1 << 30);
    r.limits(limits);
    let img = r.decode().map_err(|e| illegal(format!("The image could not be decoded: {e}")))?;
    let img = resize(img, t);
    let format = t.format.unwrap_or(match source_format {
        ImageFormat::Png | ImageFormat::WebP => source_format,
        _ => ImageFormat::Jpeg,
    });
    let mut out = Vec::new();
    match format {
        ImageFormat::Jpeg => {
            let rgb = DynamicImage::ImageRgb8(img.to_rgb8());
            rgb.write_with_encoder(image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, t.quality))
        }
        ImageFormat::WebP => {
            let rgba = DynamicImage::ImageRgba8(img.to_rgba8());
            rgba.write_with_encoder(image::codecs::webp::WebPEncoder::new_lossless(&mut out))
        }
        ImageFormat::Avif => {
            let rgba = DynamicImage::ImageRgba8(img.to_rgba8());
            rgba.write_with_encoder(image::codecs::avif::AvifEncoder::new_with_speed_quality(&mut out, AVIF_SPEED, t.quality))
        }
        ImageFormat::Tiff => {
            let mut cursor = std::io::Cursor::new(&mut out);
            img.write_with_encoder(image::codecs::tiff::TiffEncoder::new(&mut cursor))
        }
        _ => img.write_with_encoder(image::codecs::png::PngEncoder::new(&mut out)),
    }
    .map_err(|e| ApiError::internal_because(format!("encoding a transformed image failed: {e}")))?;
    Ok((Bytes::from(out), format))
}

/// The box a `w`×`h` image is resized to: the requested width and height, the missing one
/// following the image's proportions (not capped: it may be far past any budget); `None` when
/// neither is asked for or `withoutEnlargement` keeps the image as it is.
fn resize_box(w: u32, h: u32, t: &Transform) -> Option<(u64, u64)> {
    let (w64, h64) = (u64::from(w.max(1)), u64::from(h.max(1)));
    let (bw, bh) = match (t.width, t.height) {
        (None, None) => return None,
        (Some(bw), None) => (u64::from(bw), (h64 * u64::from(bw)).div_ceil(w64).max(1)),
        (None, Some(bh)) => ((w64 * u64::from(bh)).div_ceil(h64).max(1), u64::from(bh)),
        (Some(bw), Some(bh)) => (u64::from(bw), u64::from(bh)),
    };
    (!(t.without_enlargement && bw >= u64::from(w) && bh >= u64::from(h))).then_some((bw, bh))
}

/// The largest image (width, height) that transforming a `w`×`h` source by `t` makes, computed
/// without decoding: the resize box, or for `cover`/`outside` with both sides the image scaled
/// to cover the box (`cover` crops it afterwards). An upper bound of what [`resize`] allocates.
fn largest_image(w: u32, h: u32, t: &Transform) -> (u64, u64) {
    let Some((bw, bh)) = resize_box(w, h, t) else { return (u64::from(w), u64::from(h)) };
    match (t.fit, t.width.is_some() && t.height.is_some()) {
        (Fit::Cover | Fit::Outside, true) => {
            let scale = (bw as f64 / f64::from(w.max(1))).max(bh as f64 / f64::from(h.max(1)));
            (((f64::from(w) * scale).ceil() as u64).max(bw), ((f64::from(h) * scale).ceil() as u64).max(bh))
        }
        _ => (bw, bh),
    }
}

/// The image resized to the requested box (see the module docs for `fit`). Callers check
/// [`largest_image`] against the budgets first, so the box fits in `u32`.
fn resize(img: DynamicImage, t: &Transform) -> DynamicImage {
    let (w, h) = img.dimensions();
    let Some((bw, bh)) = resize_box(w, h, t) else { return img };
    let (Ok(bw), Ok(bh)) = (u32::try_from(bw), u32::try_from(bh)) else { return img };
    let filter = FilterType::Triangle;
    match (t.fit, t.width.is_some() && t.height.is_some()) {
        (_, false) | (Fit::Inside, true) => img.resize(bw, bh, filter),
        (Fit::Cover, true) => img.resize_to_fill(bw, bh, filter),
        (Fit::Outside, true) => {
            let scale = (f64::from(bw) / f64::from(w)).max(f64::from(bh) / f64::from(h));
            img.resize_exact(((f64::from(w) * scale).round() as u32).max(1), ((f64::from(h) * scale).round() as u32).max(1), filter)
        }
        (Fit::Contain, true) => {
            let inner = img.resize(bw, bh, filter);
            let mut canvas = image::RgbaImage::from_pixel(bw, bh, image::Rgba([255, 255, 255, 0]));
            let (iw, ih) = inner.dimensions();
            image::imageops::overlay(&mut canvas, &inner.to_rgba8(), i64::from((bw - iw) / 2), i64::from((bh - ih) / 2));
            DynamicImage::ImageRgba8(canvas)
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::files) fn settings() -> TransformSettings {
        TransformSettings {
            max_dimension: 6000,
            max_input_bytes: 1 << 20,
            max_output_pixels: 36_000_000,
            max_concurrent: 1,
            max_waiting: 1,
            timeout: std::time::Duration::from_secs(60),
            cache_bytes: 1 << 20,
            presets: BTreeMap::new(),
        }
    }

    pub(in crate::files) fn params(list: &[(&str, &str)]) -> HashMap<String, String> {
        list.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn timeouts_parse_as_directus_reads_them() {
        assert_eq!(parse_timeout("7500").ok(), Some(std::time::Duration::from_millis(7500)));
        assert_eq!(parse_timeout("7s 500ms").ok(), Some(std::time::Duration::from_millis(7500)));
        assert_eq!(parse_timeout("2m").ok(), Some(std::time::Duration::from_secs(120)));
        assert!(parse_timeout("0").is_err() && parse_timeout("soon").is_err());
    }

    #[test]
    fn parameters_are_checked() {
        let s = settings();
        assert!(Transform::parse(&params(&[]), &s, &AssetSettings::default()).expect("ok").is_none());
        assert!(Transform::parse(&params(&[("width", "0")]), &s, &AssetSettings::default()).is_err());
        assert!(Transform::parse(&params(&[("width", "6001")]), &s, &AssetSettings::default()).is_err());
        assert!(Transform::parse(&params(&[("fit", "stretch")]), &s, &AssetSettings::default()).is_err());
        assert!(Transform::parse(&params(&[("format", "heic")]), &s, &AssetSettings::default()).is_err());
        assert!(Transform::parse(&params(&[("format", "avif")]), &s, &AssetSettings::default()).expect("ok").is_some());
        assert!(Transform::parse(&params(&[("quality", "101")]), &s, &AssetSettings::default()).is_err());
        assert!(Transform::parse(&params(&[("key", "thumb")]), &s, &AssetSettings::default()).is_err());
        assert!(Transform::parse(&params(&[("width", "10"), ("format", "webp")]), &s, &AssetSettings::default()).expect("ok").is_some());
    }

    #[test]
    fn boxes_follow_fit() {
        let img = DynamicImage::new_rgb8(300, 200);
        let t = |w: Option<u32>, h: Option<u32>, fit: Fit| Transform { width: w, height: h, fit, quality: 80, format: None, without_enlargement: false };
        assert_eq!(resize(img.clone(), &t(Some(150), None, Fit::Cover)).dimensions(), (150, 100));
        assert_eq!(resize(img.clone(), &t(Some(100), Some(100), Fit::Cover)).dimensions(), (100, 100));
        assert_eq!(resize(img.clone(), &t(Some(100), Some(100), Fit::Inside)).dimensions(), (100, 67));
        assert_eq!(resize(img.clone(), &t(Some(100), Some(100), Fit::Contain)).dimensions(), (100, 100));
        assert_eq!(resize(img.clone(), &t(Some(100), Some(100), Fit::Outside)).dimensions(), (150, 100));
    }

    /// A 1×6000 PNG resized to `width=300` would be 300×1,800,000 pixels: refused from its
    /// header, before a pixel is decoded; so is `cover` into a box that scales it past the
    /// budget. A transformation within the budget still runs.
    #[test]
    fn extreme_aspect_ratios_are_refused_before_decoding() {
        let mut png = Vec::new();
        DynamicImage::new_luma8(1, 6000).write_to(&mut std::io::Cursor::new(&mut png), ImageFormat::Png).expect("png");
        let s = settings();
        let t = |list: &[(&str, &str)]| Transform::parse(&params(list), &s, &AssetSettings::default()).expect("ok").expect("some");
        for asked in [
            t(&[("width", "300")]),
            t(&[("width", "2500")]),
            t(&[("width", "300"), ("height", "300")]),
            t(&[("width", "300"), ("height", "300"), ("fit", "outside")]),
        ] {
            let e = transform(&png, &asked, s.max_dimension, s.max_output_pixels).expect_err("refused");
            assert_eq!(e.code, ErrorCode::IllegalAssetTransformation, "{asked:?}");
        }
        assert_eq!(largest_image(1, 6000, &t(&[("width", "300")])), (300, 1_800_000));
        // Within the budget: 1×6000 inside a 300×300 box is 1×300 (rounded up to one pixel wide).
        let (out, _) = transform(&png, &t(&[("height", "300")]), s.max_dimension, s.max_output_pixels).expect("runs");
        let img = image::load_from_memory(&out).expect("decodes");
        assert_eq!(img.dimensions(), (1, 300));
        // The pixel budget on its own: 1×200 is 200 pixels.
        assert!(transform(&png, &t(&[("height", "200")]), s.max_dimension, 200).is_ok());
        assert!(transform(&png, &t(&[("height", "200")]), s.max_dimension, 199).is_err());
    }
}
