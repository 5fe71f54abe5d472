//! What the project's settings allow of asset transformations: Directus's
//! `storage_asset_transform` (`all`, `presets`, `none`) and `storage_asset_presets` of the
//! `directus_settings` singleton (docs/files.md), read with the schema snapshot (a settings
//! change reloads it, migration 0017), beside the built-in `system-*` presets and
//! ASSETS_PRESETS ([`super::transform::TransformSettings`]).
//!
//! The rules, as Directus 11's assets controller: `all` takes any transformation (a `key` must
//! name a preset); `presets` only `?key=<preset>` alone; `none` only a `system-*` key alone
//! (the Studio's own thumbnails).

use cdapi_proto::ApiError;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};

/// A preset's parameters (`width`, `fit`, …) as text, the way a query string gives them.
pub type Preset = BTreeMap<String, String>;

/// `storage_asset_transform`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TransformMode {
    /// Any transformation (Directus's default).
    #[default]
    All,
    /// Configured presets only, by `key` alone.
    Presets,
    /// None but the Studio's `system-*` presets.
    None,
}

/// The settings' asset rules.
#[derive(Debug, Clone, Default)]
pub struct AssetSettings {
    /// `storage_asset_transform`.
    pub mode: TransformMode,
    /// `storage_asset_presets`, by key.
    pub presets: BTreeMap<String, Preset>,
}

impl AssetSettings {
    /// From the settings row's `storage_asset_presets` (a JSON array of `{key, width, height,
    /// fit, quality, format, withoutEnlargement}`) and `storage_asset_transform`. A malformed
    /// value is logged and read as none (`all` for the mode), so a bad setting never stops
    /// the service.
    pub fn from_settings(presets: Option<&str>, mode: Option<&str>) -> Self {
        let mode = match mode {
            Some("presets") => TransformMode::Presets,
            Some("none") => TransformMode::None,
            _ => TransformMode::All,
        };
        let presets = match presets.map(serde_json::from_str::<Vec<Map<String, Value>>>) {
            None => BTreeMap::new(),
            Some(Ok(list)) => parse_presets(&list).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "storage_asset_presets of the settings ignored");
                BTreeMap::new()
            }),
            Some(Err(e)) => {
                tracing::warn!(error = %e, "storage_asset_presets of the settings ignored (not an array of objects)");
                BTreeMap::new()
            }
        };
        Self { mode, presets }
    }

    /// The parameters a request's transformation comes to: the preset `key` names (from these
    /// settings, else from `configured`: the built-in and ASSETS_PRESETS ones), the request's
    /// other parameters on top. Empty when it asks for none. Errors: INVALID_QUERY when the
    /// mode refuses the request or the key names no preset.
    pub fn expand(&self, params: &HashMap<String, String>, configured: &BTreeMap<String, Preset>) -> Result<Preset, ApiError> {
        let key = params.get("key");
        let key_alone = key.is_some() && params.len() == 1;
        match self.mode {
            TransformMode::All => {}
            TransformMode::Presets if params.is_empty() || key_alone => {}
            TransformMode::Presets => return Err(ApiError::invalid_query("Only configured presets can be used in asset generation")),
            TransformMode::None if params.is_empty() || (key_alone && key.is_some_and(|k| is_system_key(k))) => {}
            TransformMode::None => return Err(ApiError::invalid_query("Dynamic asset generation has been disabled for this project")),
        }
        let mut out = Preset::new();
        if let Some(k) = key {
            let preset = self.presets.get(k).or_else(|| configured.get(k)).ok_or_else(|| ApiError::invalid_query(format!("Unknown asset preset \"{k}\"")))?;
            out.extend(preset.clone());
        }
        out.extend(params.iter().filter(|(k, _)| k.as_str() != "key").map(|(k, v)| (k.clone(), v.clone())));
        Ok(out)
    }
}

/// Presets by key from a list of preset objects (`key` required; other values as text).
/// Errors: an object without a string `key`.
pub fn parse_presets(list: &[Map<String, Value>]) -> Result<BTreeMap<String, Preset>, String> {
    let mut out = BTreeMap::new();
    for p in list {
        let key = p.get("key").and_then(Value::as_str).ok_or("every preset needs a \"key\"")?.to_owned();
        let params = p
            .iter()
            .filter(|(k, v)| k.as_str() != "key" && !v.is_null())
            .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
            .collect();
        out.insert(key, params);
    }
    Ok(out)
}

/// The sizes of the built-in presets: name and width in pixels.
pub const SYSTEM_SIZES: [(&str, &str); 3] = [("small", "64"), ("medium", "300"), ("large", "800")];

/// Whether `key` names one of [`system_presets`] (`system-<size>-<cover|contain>`).
pub fn is_system_key(key: &str) -> bool {
    match key.strip_prefix("system-").and_then(|k| k.split_once('-')) {
        Some((size, fit)) => SYSTEM_SIZES.iter().any(|(s, _)| *s == size) && matches!(fit, "cover" | "contain"),
        None => false,
    }
}

/// Directus's built-in presets the Data Studio asks for (its `SYSTEM_ASSET_ALLOW_LIST`):
/// `system-{small,medium,large}-{cover,contain}`, 64, 300 and 800 pixels wide (cover: square).
pub fn system_presets() -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for (size, px) in SYSTEM_SIZES {
        let cover = [("width", px), ("height", px), ("fit", "cover")];
        let contain = [("width", px), ("fit", "contain")];
        out.insert(format!("system-{size}-cover"), cover.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect());
        out.insert(format!("system-{size}-contain"), contain.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(list: &[(&str, &str)]) -> HashMap<String, String> {
        list.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn each_mode_admits_what_directus_admits() {
        let configured = super::system_presets();
        let with = |mode| AssetSettings::from_settings(Some(r#"[{"key": "thumb", "width": 40, "fit": "contain", "quality": null}]"#), Some(mode));
        let all = with("all");
        assert_eq!(
            all.expand(&params(&[("key", "thumb")]), &configured).expect("ok"),
            Preset::from([("width".into(), "40".into()), ("fit".into(), "contain".into())])
        );
        assert_eq!(all.expand(&params(&[("key", "thumb"), ("width", "20")]), &configured).expect("ok")["width"], "20");
        assert!(all.expand(&params(&[("key", "nope")]), &configured).is_err());
        assert!(all.expand(&params(&[("width", "20")]), &configured).is_ok());
        let presets = with("presets");
        assert!(presets.expand(&params(&[("key", "thumb")]), &configured).is_ok());
        assert!(presets.expand(&params(&[("key", "system-small-cover")]), &configured).is_ok());
        assert!(presets.expand(&params(&[("width", "20")]), &configured).is_err());
        assert!(presets.expand(&params(&[("key", "thumb"), ("width", "20")]), &configured).is_err());
        let none = with("none");
        assert!(none.expand(&params(&[("key", "system-medium-cover")]), &configured).is_ok());
        assert!(none.expand(&params(&[("key", "thumb")]), &configured).is_err());
        assert!(none.expand(&params(&[("width", "20")]), &configured).is_err());
        assert!(none.expand(&params(&[]), &configured).expect("ok").is_empty());
    }

    #[test]
    fn malformed_settings_read_as_none() {
        let s = AssetSettings::from_settings(Some("{\"key\": 1}"), Some("sideways"));
        assert_eq!((s.mode, s.presets.len()), (TransformMode::All, 0));
        let s = AssetSettings::from_settings(Some("[{\"width\": 1}]"), None);
        assert!(s.presets.is_empty());
    }
}
