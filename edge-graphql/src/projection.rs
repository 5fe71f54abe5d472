//! An item of the core's reply written as the JSON of a GraphQL selection, in one pass: response
//! keys, fragments, `@skip`/`@include`, `__typename`, `<f>_func`, Many-to-Any fragments and
//! the scalar output rules ([`crate::values::output`]), as the resolvers would build it. Used
//! by the fast path ([`crate::fast`]) and the streamed lists ([`crate::list_stream`]).
//!
//! The reply is not parsed into a value tree: an item is read as its keys and their values'
//! JSON text ([`RawItem`]), and a value is copied as it came unless a rule changes it (an `ID`
//! or `GraphQLBigInt` number becomes a string; an `Int` or `Float` sent as a string becomes a
//! number). Nested items are read the same way when the selection reaches them. Response keys
//! and type names are GraphQL names (`[_A-Za-z][_0-9A-Za-z]*`), which JSON writes unescaped.

use crate::model::{Collection, FieldKind, Scalar};
use crate::selection::{Walker, json_key};
use crate::values::output;
use async_graphql::parser::types::{Field, SelectionSet};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;

/// Fields of `sets` grouped by response key in selection order (GraphQL's CollectFields). In a
/// union member, fragments on other members are left out.
fn collect<'s>(walker: &'s Walker<'_>, sets: &[&'s SelectionSet], member: Option<(&str, &str)>) -> Vec<(&'s str, Vec<&'s Field>)> {
    let mut groups: Vec<(&str, Vec<&Field>)> = Vec::new();
    for set in sets {
        for (f, condition) in walker.fields(set) {
            if let (Some((ty, union)), Some(cond)) = (member, condition)
                && cond != ty
                && cond != union
            {
                continue;
            }
            let key = f.response_key().node.as_str();
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, list)) => list.push(f),
                None => groups.push((key, vec![f])),
            }
        }
    }
    groups
}

/// The root fields of `set` grouped by response key, in selection order (several fields under
/// one key when the document selects the same key more than once).
pub fn root_groups<'s>(walker: &'s Walker<'_>, set: &'s SelectionSet) -> Vec<(&'s str, Vec<&'s Field>)> {
    collect(walker, &[set], None)
}

/// The root fields of `set` answered under `response_key` (several when the document selects
/// the same key more than once).
pub fn root_fields<'s>(walker: &'s Walker<'_>, set: &'s SelectionSet, response_key: &str) -> Vec<&'s Field> {
    root_groups(walker, set).into_iter().find(|(k, _)| *k == response_key).map(|(_, fields)| fields).unwrap_or_default()
}

/// One item of the core's reply: its keys, in order, and each value's JSON text.
#[derive(Debug, Default)]
pub struct RawItem<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'a> RawItem<'a> {
    /// Reads the JSON object `text`; anything else reads as an item without keys (its fields
    /// then answer `null`, as a value that is no object did before). Errors: text that is not
    /// JSON.
    pub fn parse(text: &'a str) -> serde_json::Result<Self> {
        if text.trim_start().starts_with('{') { serde_json::from_str(text) } else { Ok(Self::default()) }
    }

    /// The JSON text of `key`'s value.
    fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

impl<'de> Deserialize<'de> for RawItem<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = RawItem<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some((Key(k), v)) = map.next_entry::<Key<'de>, &'de RawValue>()? {
                    entries.push((k, v));
                }
                Ok(RawItem(entries))
            }
        }
        d.deserialize_map(Entries)
    }
}

/// A key, borrowed from the reply unless it holds escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(Text)
    }
}

/// The items of the JSON list `text` (each [`RawItem::parse`]). Errors: text that is not a JSON
/// list.
pub fn parse_list(text: &str) -> serde_json::Result<Vec<&RawValue>> {
    serde_json::from_str(text)
}

/// Writes the item `item` of `collection` (GraphQL type `type_name`) as the value of `sets`,
/// JSON text, to `out`. Errors: a nested value that is not JSON.
pub fn write_item(
    walker: &Walker<'_>,
    c: &Collection,
    type_name: &str,
    sets: &[&SelectionSet],
    member: Option<(&str, &str)>,
    item: &RawItem<'_>,
    out: &mut String,
) -> serde_json::Result<()> {
    let groups = collect(walker, sets, member);
    write_fields(walker, c, type_name, &groups, item, out)
}

/// Writes the items `items` (JSON texts) of `c` as a JSON list of the values of `sets`
/// ([`write_items`]). Errors: an item that is not JSON.
pub fn write_list(walker: &Walker<'_>, c: &Collection, sets: &[&SelectionSet], items: &[&RawValue], out: &mut String) -> serde_json::Result<()> {
    out.push('[');
    write_items(walker, c, sets, items, false, out)?;
    out.push(']');
    Ok(())
}

/// Writes the items `items` (JSON texts) of `c` as the values of `sets` ([`write_item`]; the
/// selection is collected once for all), separated by commas, with one before the first when
/// `after_items` (the list already holds some). Errors: an item that is not JSON.
pub fn write_items(
    walker: &Walker<'_>,
    c: &Collection,
    sets: &[&SelectionSet],
    items: &[&RawValue],
    after_items: bool,
    out: &mut String,
) -> serde_json::Result<()> {
    let groups = collect(walker, sets, None);
    for (i, item) in items.iter().enumerate() {
        if after_items || i > 0 {
            out.push(',');
        }
        write_fields(walker, c, &c.name, &groups, &RawItem::parse(item.get())?, out)?;
    }
    Ok(())
}

/// [`write_item`] with the selection collected.
fn write_fields(
    walker: &Walker<'_>,
    c: &Collection,
    type_name: &str,
    groups: &[(&str, Vec<&Field>)],
    item: &RawItem<'_>,
    out: &mut String,
) -> serde_json::Result<()> {
    let model = walker.model();
    out.push('{');
    for (i, (key, fields)) in groups.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_name(out, key);
        out.push(':');
        let first = fields[0];
        let name = first.name.node.as_str();
        let subs = || fields.iter().map(|f| &f.selection_set.node).collect::<Vec<&SelectionSet>>();
        if name == "__typename" {
            push_name(out, type_name);
            continue;
        }
        if let Some(base) = c.function_base(name) {
            let functions = base.functions().map(|f| f.type_name()).unwrap_or_default();
            out.push('{');
            for (j, (k, g)) in collect(walker, &subs(), None).into_iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                push_name(out, k);
                out.push(':');
                let n = g[0].name.node.as_str();
                if n == "__typename" {
                    push_name(out, functions);
                } else {
                    // Function results arrive as strings (as Directus's); the fields are Int.
                    write_scalar(item.get(&format!("{}_{n}", base.name)), Scalar::Int, out)?;
                }
            }
            out.push('}');
            continue;
        }
        let nested = || item.get(&json_key(first)).map(RawValue::get).filter(|t| *t != "null");
        match c.field(name).map(|f| (&f.kind, f)) {
            None => out.push_str("null"),
            Some((FieldKind::Scalar(s), _)) => write_scalar(item.get(name), *s, out)?,
            Some((FieldKind::M2O { related }, _)) => match (nested().filter(|t| t.starts_with('{')), model.collection(related)) {
                (Some(text), Some(r)) => write_item(walker, r, &r.name, &subs(), None, &RawItem::parse(text)?, out)?,
                _ => out.push_str("null"),
            },
            Some((FieldKind::O2M { related }, _)) => match (nested().filter(|t| t.starts_with('[')), model.collection(related)) {
                (Some(text), Some(r)) => write_list(walker, r, &subs(), &parse_list(text)?, out)?,
                _ => out.push_str("null"),
            },
            Some((FieldKind::M2A { collection_field, allowed }, f)) => {
                let ty = item.get(collection_field).and_then(|t| serde_json::from_str::<Cow<'_, str>>(t.get()).ok());
                let ty = ty.filter(|t| allowed.iter().any(|a| a == t));
                match (ty.and_then(|t| model.collection(&t)), nested()) {
                    (Some(target), Some(text)) => {
                        let union = format!("{}_{}_union", c.name, f.name);
                        write_item(walker, target, &target.name, &subs(), Some((&target.name, &union)), &RawItem::parse(text)?, out)?
                    }
                    _ => out.push_str("null"),
                }
            }
        }
    }
    out.push('}');
    Ok(())
}

/// Writes a GraphQL name as a JSON string (names need no escapes).
fn push_name(out: &mut String, name: &str) {
    out.push('"');
    out.push_str(name);
    out.push('"');
}

/// Writes a scalar field's value ([`output`]; `null` when absent): the text as it came, but an
/// `ID` or `GraphQLBigInt` number as a string, and an `Int` or `Float` sent as a string as a
/// number. Errors: a string that is not JSON.
fn write_scalar(v: Option<&RawValue>, scalar: Scalar, out: &mut String) -> serde_json::Result<()> {
    let Some(text) = v.map(RawValue::get) else {
        out.push_str("null");
        return Ok(());
    };
    let number = text.starts_with(|c: char| c == '-' || c.is_ascii_digit());
    match scalar {
        Scalar::Id | Scalar::BigInt if number => {
            out.push('"');
            out.push_str(text);
            out.push('"');
        }
        Scalar::Int | Scalar::Float if text.starts_with('"') => {
            let value = output(&serde_json::from_str(text)?, scalar);
            out.push_str(&serde_json::to_string(&value)?);
        }
        _ => out.push_str(text),
    }
    Ok(())
}
