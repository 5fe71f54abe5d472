//! `export=csv|json|xml|yaml` (Directus docs "Global Query Parameters", `export`; REST only): the core
//! streams the items as NDJSON (`ItemsService.ExportItems`), and each line is rendered here into
//! the file format as it arrives, so memory stays flat at any size. The response is a download:
//! `Content-Disposition: attachment; filename="<collection> <YYYYMMDD-HHMMSS>.<ext>"`
//! (as Directus names the download).
//!
//! Formats: JSON, an array of the items; CSV (csv crate), nested objects flattened into dotted
//! column names, arrays written as JSON text, columns taken from the first item, text cells
//! that a spreadsheet would run as a formula prefixed with `'` ([`neutralise`]); XML
//! (quick-xml escaping), `<data><item>...</item></data>` with nested elements, characters that
//! XML names cannot hold replaced by `_`; YAML (serde_norway), a sequence of mappings.

use bytes::Bytes;
use cdapi_proto::v1::ExportFormat;
use serde_json::{Map, Value};

/// Turns items into one file format, piece by piece.
pub struct Renderer {
    format: ExportFormat,
    header: Option<Vec<String>>,
    count: usize,
}

impl Renderer {
    /// A renderer for `format` (UNSPECIFIED renders JSON).
    pub fn new(format: ExportFormat) -> Self {
        Self { format, header: None, count: 0 }
    }

    /// `(content type, file extension)`.
    pub fn kind(&self) -> (&'static str, &'static str) {
        match self.format {
            ExportFormat::Csv => ("text/csv; charset=utf-8", "csv"),
            ExportFormat::Xml => ("text/xml; charset=utf-8", "xml"),
            ExportFormat::Yaml => ("text/yaml; charset=utf-8", "yaml"),
            ExportFormat::Json | ExportFormat::Unspecified => ("application/json; charset=utf-8", "json"),
        }
    }

    /// Renders a chunk of NDJSON lines (whole lines). Errors: a line that is not a JSON object
    /// (a core bug; the download is then cut short).
    pub fn chunk(&mut self, ndjson: &[u8]) -> Result<Bytes, String> {
        let mut out = Vec::with_capacity(ndjson.len() + ndjson.len() / 4);
        for line in ndjson.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let item: Map<String, Value> = serde_json::from_slice(line).map_err(|e| format!("bad export line: {e}"))?;
            self.item(&item, &mut out)?;
        }
        Ok(Bytes::from(out))
    }

    fn item(&mut self, item: &Map<String, Value>, out: &mut Vec<u8>) -> Result<(), String> {
        let first = self.count == 0;
        self.count += 1;
        match self.format {
            ExportFormat::Json | ExportFormat::Unspecified => {
                out.extend_from_slice(if first { b"[" } else { b"," });
                serde_json::to_writer(&mut *out, item).map_err(|e| e.to_string())?;
            }
            ExportFormat::Csv => {
                let mut flat = Vec::new();
                flatten("", item, &mut flat);
                let header = self.header.get_or_insert_with(|| flat.iter().map(|(k, _)| k.clone()).collect());
                let mut w = csv::Writer::from_writer(Vec::new());
                if first {
                    w.write_record(header.iter().map(|h| neutralise(h))).map_err(|e| e.to_string())?;
                }
                let lookup: std::collections::HashMap<&str, &str> = flat.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                w.write_record(header.iter().map(|h| lookup.get(h.as_str()).copied().unwrap_or(""))).map_err(|e| e.to_string())?;
                out.extend_from_slice(&w.into_inner().map_err(|e| e.to_string())?);
            }
            ExportFormat::Xml => {
                if first {
                    out.extend_from_slice(b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<data>");
                }
                out.extend_from_slice(b"<item>");
                for (k, v) in item {
                    xml_value(k, v, out);
                }
                out.extend_from_slice(b"</item>");
            }
            ExportFormat::Yaml => {
                let text = serde_norway::to_string(&[item]).map_err(|e| e.to_string())?;
                out.extend_from_slice(text.as_bytes());
            }
        }
        Ok(())
    }

    /// What closes the file (also for zero items).
    pub fn finish(&self) -> Bytes {
        let empty = self.count == 0;
        Bytes::from_static(match (self.format, empty) {
            (ExportFormat::Json | ExportFormat::Unspecified, true) => b"[]",
            (ExportFormat::Json | ExportFormat::Unspecified, false) => b"]",
            (ExportFormat::Xml, true) => b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<data></data>\n",
            (ExportFormat::Xml, false) => b"</data>\n",
            (ExportFormat::Yaml, true) => b"[]\n",
            _ => b"",
        })
    }
}

/// `{"a":{"b":1},"c":[1]}` → `[("a.b","1"), ("c","[1]")]`; null → empty cell.
fn flatten(prefix: &str, obj: &Map<String, Value>, out: &mut Vec<(String, String)>) {
    for (k, v) in obj {
        let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        match v {
            Value::Object(m) => flatten(&key, m, out),
            Value::Null => out.push((key, String::new())),
            Value::String(s) => out.push((key, neutralise(s))),
            other => out.push((key, other.to_string())),
        }
    }
}

/// A CSV cell a spreadsheet will not run as a formula (OWASP "CSV Injection"): text starting
/// with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'`. Only strings: numbers
/// (`-5`) are written as they are.
fn neutralise(text: &str) -> String {
    match text.as_bytes().first() {
        Some(b'=' | b'+' | b'-' | b'@' | b'\t' | b'\r') => format!("'{text}"),
        _ => text.to_owned(),
    }
}

fn xml_name(key: &str) -> String {
    let mut name: String = key.chars().map(|c| if c.is_alphanumeric() || matches!(c, '_' | '-' | '.') { c } else { '_' }).collect();
    if !name.starts_with(|c: char| c.is_alphabetic() || c == '_') {
        name.insert(0, '_');
    }
    name
}

fn xml_value(key: &str, v: &Value, out: &mut Vec<u8>) {
    let name = xml_name(key);
    match v {
        Value::Null => out.extend_from_slice(format!("<{name}/>").as_bytes()),
        Value::Object(m) => {
            out.extend_from_slice(format!("<{name}>").as_bytes());
            for (k, v) in m {
                xml_value(k, v, out);
            }
            out.extend_from_slice(format!("</{name}>").as_bytes());
        }
        Value::Array(items) => {
            out.extend_from_slice(format!("<{name}>").as_bytes());
            for i in items {
                xml_value("item", i, out);
            }
            out.extend_from_slice(format!("</{name}>").as_bytes());
        }
        Value::String(s) => {
            out.extend_from_slice(format!("<{name}>{}</{name}>", quick_xml::escape::escape(s.as_str())).as_bytes());
        }
        other => out.extend_from_slice(format!("<{name}>{other}</{name}>").as_bytes()),
    }
}

/// `20260102-030405` for a UNIX time in seconds (UTC), as Directus names export files.
pub fn timestamp(unix_secs: u64) -> String {
    let days = (unix_secs / 86_400) as i64;
    let secs = unix_secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}{month:02}{day:02}-{:02}{:02}{:02}", secs / 3600, secs % 3600 / 60, secs % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(format: ExportFormat, lines: &str) -> String {
        let mut r = Renderer::new(format);
        let mut out = r.chunk(lines.as_bytes()).unwrap_or_default().to_vec();
        out.extend_from_slice(&r.finish());
        String::from_utf8(out).unwrap_or_default()
    }

    const ITEMS: &str =
        "{\"id\":1,\"title\":\"a, \\\"b\\\"\",\"author\":{\"name\":\"X\"},\"tags\":[1,2]}\n{\"id\":2,\"title\":\"<c>\",\"author\":null,\"tags\":[]}\n";

    #[test]
    fn csv_flattens_and_quotes() {
        assert_eq!(render(ExportFormat::Csv, ITEMS), "id,title,author.name,tags\n1,\"a, \"\"b\"\"\",X,\"[1,2]\"\n2,<c>,,[]\n");
    }

    #[test]
    fn csv_cells_never_start_a_formula() {
        let lines = "{\"a\":\"=1+1\",\"b\":\"+x\",\"c\":\"-y\",\"d\":\"@z\",\"e\":\"\\tt\",\"f\":\"\\rr\",\"g\":-5,\"h\":\"ok=\"}\n";
        assert_eq!(render(ExportFormat::Csv, lines), "a,b,c,d,e,f,g,h\n'=1+1,'+x,'-y,'@z,'\tt,\"'\rr\",-5,ok=\n");
    }

    #[test]
    fn json_xml_yaml_shapes() {
        let json: Value = serde_json::from_str(&render(ExportFormat::Json, ITEMS)).unwrap_or_default();
        assert_eq!(json[1]["title"], "<c>");
        assert_eq!(render(ExportFormat::Json, ""), "[]");
        let xml = render(ExportFormat::Xml, ITEMS);
        assert!(
            xml.contains("<item><id>1</id><title>a, &quot;b&quot;</title><author><name>X</name></author><tags><item>1</item><item>2</item></tags></item>"),
            "{xml}"
        );
        assert!(xml.contains("<title>&lt;c&gt;</title><author/>"), "{xml}");
        let yaml: Vec<Map<String, Value>> = serde_norway::from_str(&render(ExportFormat::Yaml, ITEMS)).unwrap_or_default();
        assert_eq!(yaml.len(), 2);
        assert_eq!(yaml[0]["author"]["name"], "X");
    }

    #[test]
    fn timestamps_are_utc_civil_dates() {
        assert_eq!(timestamp(0), "19700101-000000");
        assert_eq!(timestamp(1_709_251_199), "20240229-235959");
    }
}
