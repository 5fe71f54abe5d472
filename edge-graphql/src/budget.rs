//! What one GraphQL document may ask for (docs/security.md "Budgets"), checked on the parsed document
//! before anything else happens: no schema lookup, no core or auth-service call. Each root
//! field is one core call and each `auth_login` one argon2 verification, so a document of
//! thousands of aliased root fields or logins must not get further than the edge. Exceeding a
//! cap answers 400 with code GRAPHQL_VALIDATION, as the depth and complexity limits do (and as
//! Directus answers its own GRAPHQL_QUERY_TOKEN_LIMIT).
//!
//! The counts are over the document as written: fragments are followed (each once, so a cycle
//! or a fragment spread many times costs nothing more), `@skip`/`@include` are not evaluated.

use async_graphql::parser::types::{DocumentOperations, ExecutableDocument, Field, OperationType, Selection, SelectionSet};
use std::collections::HashSet;

/// The caps (docs/configuration.md, edge-graphql rows).
#[derive(Debug, Clone, Copy)]
pub struct DocumentLimits {
    /// GRAPHQL_MAX_DOCUMENT_SIZE (bytes, default 32768): longest query text.
    pub max_bytes: usize,
    /// GRAPHQL_MAX_ROOT_FIELDS (default 20): most root fields of one operation (each is a call
    /// to a service).
    pub max_root_fields: usize,
    /// GRAPHQL_MAX_ALIASES (default 100): most aliased fields in the document.
    pub max_aliases: usize,
    /// GRAPHQL_MAX_FIELDS (default 1000): most fields written in the document (fragments
    /// counted once; the complexity limit then bounds them after expansion).
    pub max_fields: usize,
    /// GRAPHQL_MAX_AUTH_MUTATIONS (default 1, what Directus clients send): most `auth_*` root
    /// fields in the mutations of one document.
    pub max_auth_mutations: usize,
}

impl Default for DocumentLimits {
    fn default() -> Self {
        Self { max_bytes: 32_768, max_root_fields: 20, max_aliases: 100, max_fields: 1000, max_auth_mutations: 1 }
    }
}

/// What a document holds, as the caps count it.
#[derive(Debug, Default, PartialEq)]
struct Counts {
    root_fields: usize,
    aliases: usize,
    fields: usize,
    auth_mutations: usize,
}

impl DocumentLimits {
    /// Errors: the message of the first cap `text` (and its parse, when it parsed) exceeds.
    pub fn check(&self, text: &str, doc: Option<&ExecutableDocument>) -> Result<(), String> {
        if text.len() > self.max_bytes {
            return Err(format!("The query document is larger than {} bytes (GRAPHQL_MAX_DOCUMENT_SIZE).", self.max_bytes));
        }
        let Some(doc) = doc else { return Ok(()) };
        let c = count(doc);
        let over = |n: usize, max: usize, what: &str, setting: &str| (n > max).then(|| format!("The query document has more than {max} {what} ({setting})."));
        over(c.root_fields, self.max_root_fields, "root fields in one operation", "GRAPHQL_MAX_ROOT_FIELDS")
            .or_else(|| over(c.aliases, self.max_aliases, "aliases", "GRAPHQL_MAX_ALIASES"))
            .or_else(|| over(c.fields, self.max_fields, "fields", "GRAPHQL_MAX_FIELDS"))
            .or_else(|| over(c.auth_mutations, self.max_auth_mutations, "auth_* mutations", "GRAPHQL_MAX_AUTH_MUTATIONS"))
            .map_or(Ok(()), Err)?;
        single_root_subscriptions(doc)
    }
}

/// The GraphQL specification's "Single root field" rule (graphql-js's
/// `SingleFieldSubscriptionsRule`, which Directus runs): a subscription operation selects one
/// root field, not an introspection one. Stricter than graphql-js in two ways, both because
/// async-graphql starts one stream (one core `Subscribe`) per root field it finds written
/// directly in the operation: the same field written twice is two fields here (graphql-js
/// merges them and runs one), and a fragment at the root is refused (async-graphql would run
/// nothing for it). Without the rule one operation, counted once against
/// WEBSOCKETS_MAX_SUBSCRIPTIONS, would open up to GRAPHQL_MAX_ROOT_FIELDS streams. Errors:
/// graphql-js's messages, and one naming the fragment.
fn single_root_subscriptions(doc: &ExecutableDocument) -> Result<(), String> {
    let operations: Vec<(Option<&str>, _)> = match &doc.operations {
        DocumentOperations::Single(op) => vec![(None, &op.node)],
        DocumentOperations::Multiple(ops) => ops.iter().map(|(name, op)| (Some(name.as_str()), &op.node)).collect(),
    };
    for (name, op) in operations.into_iter().filter(|(_, op)| op.ty == OperationType::Subscription) {
        let named = name.map_or_else(|| "Anonymous Subscription".to_owned(), |n| format!("Subscription \"{n}\""));
        let fields = root_fields(doc, &op.selection_set.node);
        if fields.len() != 1 {
            return Err(format!("{named} must select only one top level field."));
        }
        if fields.iter().any(|f| f.name.node.starts_with("__")) {
            return Err(format!("{named} must not select an introspection top level field."));
        }
        if op.selection_set.node.items.iter().any(|item| !matches!(item.node, Selection::Field(_))) {
            return Err(format!("{named} must select its top level field directly, not through a fragment."));
        }
    }
    Ok(())
}

fn count(doc: &ExecutableDocument) -> Counts {
    let mut c = Counts::default();
    // Every field and alias written anywhere (operations and fragment definitions).
    let operations: Vec<_> = match &doc.operations {
        DocumentOperations::Single(op) => vec![&op.node],
        DocumentOperations::Multiple(ops) => ops.values().map(|op| &op.node).collect(),
    };
    let sets = operations.iter().map(|op| &op.selection_set.node).chain(doc.fragments.values().map(|f| &f.node.selection_set.node));
    for set in sets {
        let mut stack = vec![set];
        while let Some(set) = stack.pop() {
            for item in &set.items {
                match &item.node {
                    Selection::Field(f) => {
                        c.fields += 1;
                        c.aliases += usize::from(f.node.alias.is_some());
                        stack.push(&f.node.selection_set.node);
                    }
                    Selection::InlineFragment(i) => stack.push(&i.node.selection_set.node),
                    Selection::FragmentSpread(_) => {}
                }
            }
        }
    }
    // Root fields per operation (through fragments); auth_* across the document's mutations.
    for op in operations {
        let roots = root_fields(doc, &op.selection_set.node);
        c.root_fields = c.root_fields.max(roots.len());
        if op.ty == OperationType::Mutation {
            c.auth_mutations += roots.iter().filter(|f| f.name.node.starts_with("auth_")).count();
        }
    }
    c
}

/// An operation's root fields, following fragments (each fragment once).
fn root_fields<'a>(doc: &'a ExecutableDocument, set: &'a SelectionSet) -> Vec<&'a Field> {
    let mut fields = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut stack = vec![set];
    while let Some(set) = stack.pop() {
        for item in &set.items {
            match &item.node {
                Selection::Field(f) => fields.push(&f.node),
                Selection::InlineFragment(i) => stack.push(&i.node.selection_set.node),
                Selection::FragmentSpread(s) => {
                    let name = s.node.fragment_name.node.as_str();
                    if seen.insert(name)
                        && let Some(def) = doc.fragments.get(&s.node.fragment_name.node)
                    {
                        stack.push(&def.node.selection_set.node);
                    }
                }
            }
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(text: &str) -> Counts {
        count(&async_graphql::parser::parse_query(text).expect("parses"))
    }

    #[test]
    fn counts_follow_fragments_once() {
        let c = counts("query { a: articles { id } ...R ...R } fragment R on Query { b: authors { name } ... on Query { tags { id } } }");
        assert_eq!(c, Counts { root_fields: 3, aliases: 2, fields: 6, auth_mutations: 0 });
        let c = counts(
            "mutation { a: auth_login(email: \"x\", password: \"y\") { access_token } ...L } fragment L on Mutation { b: auth_login(email: \"x\", password: \"y\") { access_token } }",
        );
        assert_eq!(c.auth_mutations, 2);
        // A cycle of fragments is counted, never followed for ever.
        assert_eq!(counts("query { ...A } fragment A on Query { a ...B } fragment B on Query { b ...A }").root_fields, 2);
    }

    #[test]
    fn caps_refuse_with_the_setting_named() {
        let limits = DocumentLimits { max_root_fields: 2, ..DocumentLimits::default() };
        let doc = async_graphql::parser::parse_query("{ a: x b: x c: x }").expect("parses");
        let err = limits.check("{ a: x b: x c: x }", Some(&doc)).err().unwrap_or_default();
        assert!(err.contains("GRAPHQL_MAX_ROOT_FIELDS"), "{err}");
        assert!(DocumentLimits::default().check(&"#".repeat(40_000), None).is_err());
        let logins = "mutation { a: auth_login(email: \"x\", password: \"y\") { access_token } b: auth_refresh { access_token } }";
        let doc = async_graphql::parser::parse_query(logins).expect("parses");
        assert!(DocumentLimits::default().check(logins, Some(&doc)).is_err());
        let one = "mutation { auth_login(email: \"x\", password: \"y\") { access_token } }";
        let doc = async_graphql::parser::parse_query(one).expect("parses");
        assert!(DocumentLimits::default().check(one, Some(&doc)).is_ok());
    }

    #[test]
    fn a_subscription_selects_one_root_field() {
        let check = |text: &str| DocumentLimits::default().check(text, Some(&async_graphql::parser::parse_query(text).expect("parses")));
        assert_eq!(
            check("subscription { a: x_mutated { key } b: x_mutated { key } }"),
            Err("Anonymous Subscription must select only one top level field.".into())
        );
        assert_eq!(
            check("subscription S { ...F } fragment F on Subscription { x_mutated { key } y_mutated { key } }"),
            Err("Subscription \"S\" must select only one top level field.".into())
        );
        assert!(check("subscription { __typename }").is_err());
        // async-graphql would run each: two streams, unlike graphql-js, which merges them.
        assert!(check("subscription { x_mutated { key } x_mutated { event } }").is_err());
        assert_eq!(
            check("subscription { ...F } fragment F on Subscription { x_mutated { key } }"),
            Err("Anonymous Subscription must select its top level field directly, not through a fragment.".into())
        );
        assert_eq!(check("subscription S { x_mutated { key } }"), Ok(()));
        assert_eq!(check("query { a: x { id } b: x { id } }"), Ok(()), "queries may have many");
    }
}
