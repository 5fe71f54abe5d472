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
use std::cell::OnceCell;

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

/// A selection compiled for the items of one collection (one GraphQL type): what each response
/// key is written from, resolved once for a whole list instead of once per item (GraphQL's
/// CollectFields, field lookups, the JSON keys of relations). Many-to-any members are compiled
/// when an item of theirs first comes.
pub struct Shape<'s> {
    steps: Vec<(&'s str, Step<'s>)>,
    /// Whether the core's JSON of an item already is the selection's (see [`Shape::verbatim`]).
    verbatim: bool,
}

/// How one response key of an item is written.
enum Step<'s> {
    /// A JSON text fixed by the selection: `null` (a field the type does not have) or a type name
    /// as a string (`__typename`).
    Fixed(String),
    /// A scalar field's value, read under the field's name.
    Scalar { source: &'s str, scalar: Scalar },
    /// `<f>_func { year … }`: each part, `Some(reply key)` of an `Int` result or `None` for the
    /// functions type's `__typename` (the type name).
    Functions { parts: Vec<(&'s str, Option<String>)>, type_name: &'static str },
    /// A many-to-one item read under `source`.
    Item { source: String, shape: Box<Shape<'s>> },
    /// A to-many list read under `source`.
    List { source: String, shape: Box<Shape<'s>> },
    /// A many-to-any item read under `source`, its collection under `collection_field`.
    AnyItem(Box<AnyItem<'s>>),
}

/// A many-to-any field's selection, compiled per member collection on first use.
struct AnyItem<'s> {
    walker: &'s Walker<'s>,
    source: String,
    collection_field: &'s str,
    /// The union's type name (`<collection>_<field>_union`).
    union: String,
    sets: Vec<&'s SelectionSet>,
    members: Vec<(&'s Collection, OnceCell<Shape<'s>>)>,
}

impl<'s> Shape<'s> {
    /// Compiles `sets` for items of `c` written as GraphQL type `type_name`; `member` (the
    /// member's and the union's type names) for an item of a many-to-any union.
    pub fn new(walker: &'s Walker<'s>, c: &'s Collection, type_name: &'s str, sets: &[&'s SelectionSet], member: Option<(&str, &str)>) -> Self {
        let model = walker.model();
        let mut steps = Vec::new();
        // Several selection sets under one key (a root field selected twice) are not what the
        // core was asked for: the stream of one of them answers.
        let mut verbatim = member.is_none() && sets.len() == 1;
        for (key, fields) in collect(walker, sets, member) {
            let first = fields[0];
            let name = first.name.node.as_str();
            let subs = || fields.iter().map(|f| &f.selection_set.node).collect::<Vec<&'s SelectionSet>>();
            let step = if name == "__typename" {
                Step::Fixed(format!("\"{type_name}\""))
            } else if let Some(base) = c.function_base(name) {
                let parts = collect(walker, &subs(), None).into_iter().map(|(k, g)| {
                    let n = g[0].name.node.as_str();
                    // Function results arrive as `<field>_<function>` strings (as Directus's).
                    (k, (n != "__typename").then(|| format!("{}_{n}", base.name)))
                });
                Step::Functions { parts: parts.collect(), type_name: base.functions().map(|f| f.type_name()).unwrap_or_default() }
            } else {
                match c.field(name).map(|f| (&f.kind, f)) {
                    None => Step::Fixed("null".to_owned()),
                    Some((FieldKind::Scalar(s), _)) => Step::Scalar { source: name, scalar: *s },
                    Some((FieldKind::M2O { related }, _)) => match model.collection(related) {
                        Some(r) => Step::Item { source: json_key(first), shape: Box::new(Shape::new(walker, r, &r.name, &subs(), None)) },
                        None => Step::Fixed("null".to_owned()),
                    },
                    Some((FieldKind::O2M { related }, _)) => match model.collection(related) {
                        Some(r) => Step::List { source: json_key(first), shape: Box::new(Shape::new(walker, r, &r.name, &subs(), None)) },
                        None => Step::Fixed("null".to_owned()),
                    },
                    Some((FieldKind::M2A { collection_field, allowed }, f)) => Step::AnyItem(Box::new(AnyItem {
                        walker,
                        source: json_key(first),
                        collection_field,
                        union: format!("{}_{}_union", c.name, f.name),
                        sets: subs(),
                        members: allowed.iter().filter_map(|a| model.collection(a)).map(|m| (m, OnceCell::new())).collect(),
                    })),
                }
            };
            verbatim = verbatim && fields.len() == 1 && copies(key, &step, steps.last().map(|(_, s)| s));
            steps.push((key, step));
        }
        // An empty selection (every field skipped) reads keys the core adds (the primary key,
        // or `*` at the root) but writes `{}`.
        verbatim = verbatim && !steps.is_empty();
        Self { steps, verbatim }
    }

    /// This shape, rewriting every item: for a reply the core did not write for this
    /// selection (a singleton without a row answers its fields' defaults, in table order).
    pub fn rewriting(mut self) -> Self {
        self.verbatim = false;
        self
    }

    /// Whether an item the core wrote for this selection (its typed query from
    /// [`crate::selection`], read with `graphql_values`) is already the selection's JSON, so
    /// the fast path copies the reply as it came instead of rewriting each item. True when
    /// every response key is a field's own name, selected once (at least one), and the reply needs no change:
    /// scalars other than `Float` (the core writes an `ID` as a string and never a string
    /// where an `Int` goes; a `decimal` arrives as a string), then related items whose
    /// selections are verbatim too, as the core orders an item's keys (plain values first,
    /// then relations, each in the order selected). No `__typename`, `<f>_func` or Many-to-Any.
    pub fn verbatim(&self) -> bool {
        self.verbatim
    }

    /// Writes `item` as the JSON text of the selection to `out`. Errors: a nested value that
    /// is not JSON.
    pub fn write(&self, item: &RawItem<'_>, out: &mut String) -> serde_json::Result<()> {
        out.push('{');
        for (i, (key, step)) in self.steps.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_name(out, key);
            out.push(':');
            match step {
                Step::Fixed(text) => out.push_str(text),
                Step::Scalar { source, scalar } => write_scalar(item.get(source), *scalar, out)?,
                Step::Functions { parts, type_name } => {
                    out.push('{');
                    for (j, (k, source)) in parts.iter().enumerate() {
                        if j > 0 {
                            out.push(',');
                        }
                        push_name(out, k);
                        out.push(':');
                        match source {
                            None => push_name(out, type_name),
                            Some(source) => write_scalar(item.get(source), Scalar::Int, out)?,
                        }
                    }
                    out.push('}');
                }
                Step::Item { source, shape } => match nested(item, source).filter(|t| t.starts_with('{')) {
                    Some(text) => shape.write(&RawItem::parse(text)?, out)?,
                    None => out.push_str("null"),
                },
                Step::List { source, shape } => match nested(item, source).filter(|t| t.starts_with('[')) {
                    Some(text) => shape.write_list(&parse_list(text)?, out)?,
                    None => out.push_str("null"),
                },
                Step::AnyItem(any) => any.write(item, out)?,
            }
        }
        out.push('}');
        Ok(())
    }

    /// Writes the items `items` (JSON texts) as a JSON list ([`Shape::write`]). Errors: an item
    /// that is not JSON.
    pub fn write_list(&self, items: &[&RawValue], out: &mut String) -> serde_json::Result<()> {
        out.push('[');
        self.write_items(items, false, out)?;
        out.push(']');
        Ok(())
    }

    /// Writes the items `items` (JSON texts) separated by commas, with one before the first when
    /// `after_items` (the list already holds some). Errors: an item that is not JSON.
    pub fn write_items(&self, items: &[&RawValue], after_items: bool, out: &mut String) -> serde_json::Result<()> {
        for (i, item) in items.iter().enumerate() {
            if after_items || i > 0 {
                out.push(',');
            }
            if self.verbatim {
                out.push_str(item.get());
            } else {
                self.write(&RawItem::parse(item.get())?, out)?;
            }
        }
        Ok(())
    }

    /// Writes the core's reply `text` (an item, a list of items or `null`) as the selection's
    /// JSON: copied as it came when [`Shape::verbatim`]. Errors: text that is not JSON (when
    /// rewritten).
    pub fn write_reply(&self, text: &str, out: &mut String) -> serde_json::Result<()> {
        match text.trim() {
            "null" => out.push_str("null"),
            reply if self.verbatim => out.push_str(reply),
            list if list.starts_with('[') => self.write_list(&parse_list(list)?, out)?,
            item => self.write(&RawItem::parse(item)?, out)?,
        }
        Ok(())
    }
}

/// Whether `step`, written under response key `key` after `previous`, copies the core's value
/// as it came ([`Shape::verbatim`]).
fn copies(key: &str, step: &Step<'_>, previous: Option<&Step<'_>>) -> bool {
    let after_relation = matches!(previous, Some(Step::Item { .. } | Step::List { .. }));
    match step {
        Step::Scalar { source, scalar } => *source == key && *scalar != Scalar::Float && !after_relation,
        Step::Item { source, shape } | Step::List { source, shape } => source == key && shape.verbatim,
        Step::Fixed(_) | Step::Functions { .. } | Step::AnyItem(_) => false,
    }
}

impl AnyItem<'_> {
    /// Writes the item of `parent` as its member's selection; `null` when its collection is
    /// not one the union has or it has no item.
    fn write(&self, parent: &RawItem<'_>, out: &mut String) -> serde_json::Result<()> {
        let ty = parent.get(self.collection_field).and_then(|t| serde_json::from_str::<Cow<'_, str>>(t.get()).ok());
        let member = ty.and_then(|t| self.members.iter().find(|(m, _)| m.name == *t));
        match (member, nested(parent, &self.source)) {
            (Some((m, shape)), Some(text)) => {
                let shape = shape.get_or_init(|| Shape::new(self.walker, m, &m.name, &self.sets, Some((&m.name, &self.union))));
                shape.write(&RawItem::parse(text)?, out)
            }
            _ => {
                out.push_str("null");
                Ok(())
            }
        }
    }
}

/// The JSON text of `key`'s value in `item`, unless absent or `null`.
fn nested<'a>(item: &RawItem<'a>, key: &str) -> Option<&'a str> {
    item.get(key).map(RawValue::get).filter(|t| *t != "null")
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Model;
    use async_graphql::Variables;
    use async_graphql::parser::parse_query;
    use cdapi_proto::v1 as pb;

    fn model() -> Model {
        use pb::FieldType as T;
        use pb::field::Relation as R;
        let f = |name: &str, ty: T, pk: bool| pb::Field { name: name.into(), r#type: ty as i32, primary_key: pk, ..Default::default() };
        let rel = |field: pb::Field, relation: R| pb::Field { relation: Some(relation), ..field };
        let collection =
            |name: &str, fields: Vec<pb::Field>| pb::Collection { name: name.into(), primary_key: vec!["id".into()], fields, ..Default::default() };
        let m2o = R::M2o(pb::ManyToOne { related_collection: "authors".into(), related_field: "id".into(), ..Default::default() });
        let o2m = R::O2m(pb::OneToMany { related_collection: "articles".into(), related_field: "author".into(), ..Default::default() });
        let m2a = R::M2a(pb::ManyToAny { collection_field: "collection".into(), allowed_collections: vec!["headings".into(), "authors".into()] });
        let snapshot = pb::SchemaSnapshot {
            version: 1,
            collections: vec![
                collection(
                    "articles",
                    vec![
                        f("id", T::Integer, true),
                        f("title", T::String, false),
                        f("rating", T::Decimal, false),
                        f("published", T::Date, false),
                        rel(f("author", T::Integer, false), m2o),
                        rel(f("item", T::String, false), m2a),
                        f("collection", T::String, false),
                    ],
                ),
                collection("authors", vec![f("id", T::Integer, true), f("name", T::String, false), rel(f("articles", T::Alias, false), o2m)]),
                collection("headings", vec![f("id", T::Integer, true), f("title", T::String, false)]),
            ],
            relations: vec![],
        };
        Model::from_snapshot(&snapshot)
    }

    /// Calls `f` with the shape of the only root field of `query` (on `articles`).
    fn with_shape<T>(query: &str, variables: serde_json::Value, f: impl FnOnce(&Shape<'_>) -> T) -> T {
        let model = model();
        let doc = parse_query(query).expect("a document");
        let variables = Variables::from_json(variables);
        let operation = crate::selection::operation(&doc, None).expect("one operation");
        let walker = Walker::of_document(&model, &doc, operation, &variables);
        let [(_, fields)] = root_groups(&walker, &operation.selection_set.node).try_into().expect("one root field");
        let c = model.collection("articles").expect("articles");
        let sets: Vec<&SelectionSet> = fields.iter().map(|f| &f.selection_set.node).collect();
        f(&Shape::new(&walker, c, &c.name, &sets, None))
    }

    /// The items `reply` (the core's JSON list) written as the selection of the only root field
    /// of `query` (on `articles`).
    fn written(query: &str, variables: serde_json::Value, reply: &str) -> String {
        with_shape(query, variables, |shape| {
            let mut out = String::new();
            shape.write_reply(reply, &mut out).expect("written");
            out
        })
    }

    #[test]
    fn a_plain_selection_copies_the_reply_which_rewriting_would_not_change() {
        let query = "{ articles { id title author { id name articles { id title } } } }";
        // The core's reply with `graphql_values`: keys as text, plain values before relations.
        let reply = r#"[{"id":"1","title":"A","author":{"id":"3","name":"Ann","articles":[{"id":"1","title":"A"}]}},{"id":"2","title":null,"author":null}]"#;
        with_shape(query, serde_json::json!({}), |shape| {
            assert!(shape.verbatim());
            for item in parse_list(reply).expect("a list") {
                let mut rewritten = String::new();
                shape.write(&RawItem::parse(item.get()).expect("an item"), &mut rewritten).expect("written");
                assert_eq!(rewritten, item.get(), "rewriting the item changes nothing");
            }
        });
        assert_eq!(written(query, serde_json::json!({}), reply), reply);
    }

    #[test]
    fn a_selection_the_reply_does_not_match_is_rewritten() {
        for query in [
            "{ articles { title @include(if: false) } }",
            "{ articles { id author { name @skip(if: true) } } }",
            "{ articles { n: id } }",
            "{ articles { __typename id } }",
            "{ articles { id rating } }",
            "{ articles { author { name } id } }",
            "{ articles { published_func { year } } }",
            "{ articles { item { ... on headings { title } } } }",
            "{ articles { author { name } author { id } } }",
            "{ articles { author { n: name } } }",
        ] {
            with_shape(query, serde_json::json!({}), |shape| assert!(!shape.verbatim(), "{query}"));
        }
        let query = "{ articles { author { name } id } }";
        let reply = r#"[{"id":"1","author":{"name":"Ann"}}]"#;
        assert_eq!(written(query, serde_json::json!({}), reply), r#"[{"author":{"name":"Ann"},"id":"1"}]"#);
    }

    #[test]
    fn scalars_take_response_keys_and_graphql_output_rules() {
        let reply = r#"[{"id":1,"title":"A \"quote\"","rating":"4.50","published_year":"2024"},{"id":2,"title":null,"rating":null,"published_year":null}]"#;
        let query = "{ articles { __typename n: id title rating published_func { y: year __typename } missing: title @skip(if: true) } }";
        assert_eq!(
            written(query, serde_json::json!({}), reply),
            r#"[{"__typename":"articles","n":"1","title":"A \"quote\"","rating":4.5,"published_func":{"y":2024,"__typename":"date_functions"}},{"__typename":"articles","n":"2","title":null,"rating":null,"published_func":{"y":null,"__typename":"date_functions"}}]"#
        );
    }

    #[test]
    fn relations_are_read_under_their_json_keys_and_written_nested() {
        let reply = r#"[
            {"author":{"name":"Ann","articles":[{"id":"7"},{"id":"8"}]},"w@author":{"id":3},"item":{"title":"H"},"collection":"headings"},
            {"author":null,"w@author":null,"item":{"name":"Bo"},"collection":"authors"},
            {"author":{"name":"Cy","articles":null},"w@author":{"id":4},"item":{"title":"?"},"collection":"unknown"}
        ]"#;
        let query = "query($with: Boolean!) { articles { author { name articles { id } } w: author @include(if: $with) { id }
            item { __typename ... on headings { title } ... on authors { name } } } }";
        assert_eq!(
            written(query, serde_json::json!({"with": true}), reply),
            concat!(
                r#"[{"author":{"name":"Ann","articles":[{"id":"7"},{"id":"8"}]},"w":{"id":"3"},"item":{"__typename":"headings","title":"H"}},"#,
                r#"{"author":null,"w":null,"item":{"__typename":"authors","name":"Bo"}},"#,
                r#"{"author":{"name":"Cy","articles":null},"w":{"id":"4"},"item":null}]"#
            )
        );
        assert_eq!(
            written(query, serde_json::json!({"with": false}), r#"[{"author":null,"item":null,"collection":null}]"#),
            r#"[{"author":null,"item":null}]"#
        );
    }
}
