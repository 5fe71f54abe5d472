//! Default names of O2M alias fields (docs/data-model.md "How the database is exposed"): the referencing collection's name (without
//! the `directus_` prefix of system collections); when the
//! same collection references the target more than once, or the name is taken by a column,
//! `<collection>_<foreign key column>`. Names configured in `cdapi.relations.one_field` win.

use std::collections::{HashMap, HashSet};

/// A foreign key seen by introspection, before alias naming.
#[derive(Debug, Clone)]
pub struct ForeignKey {
    /// Table holding the key.
    pub many_collection: String,
    /// Key column.
    pub many_field: String,
    /// Referenced table.
    pub one_collection: String,
    /// Referenced column.
    pub one_field_column: String,
}

/// Picks the alias name of each foreign key's reverse O2M. `taken` holds the existing column
/// names per collection. Returns `None` for a key whose default names are all taken.
pub fn default_aliases(fks: &[ForeignKey], taken: &HashMap<String, HashSet<String>>) -> Vec<Option<String>> {
    let mut per_pair: HashMap<(&str, &str), usize> = HashMap::new();
    for fk in fks {
        *per_pair.entry((&fk.one_collection, &fk.many_collection)).or_default() += 1;
    }
    let mut used: HashMap<&str, HashSet<String>> = HashMap::new();
    fks.iter()
        .map(|fk| {
            let columns = taken.get(&fk.one_collection);
            let is_free = |name: &str, used: &HashMap<&str, HashSet<String>>| {
                !columns.is_some_and(|c| c.contains(name)) && !used.get(fk.one_collection.as_str()).is_some_and(|u| u.contains(name))
            };
            // System collections read as Directus names them: `users` on `directus_roles`.
            let plain = fk.many_collection.strip_prefix(crate::schema::SYSTEM_PREFIX).unwrap_or(&fk.many_collection).to_owned();
            let qualified = format!("{}_{}", fk.many_collection, fk.many_field);
            let unique_pair = per_pair[&(fk.one_collection.as_str(), fk.many_collection.as_str())] == 1;
            let choice = [unique_pair.then_some(plain), Some(qualified)].into_iter().flatten().find(|n| is_free(n, &used));
            if let Some(name) = &choice {
                used.entry(&fk.one_collection).or_default().insert(name.clone());
            }
            choice
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fk(m: &str, f: &str, o: &str) -> ForeignKey {
        ForeignKey { many_collection: m.into(), many_field: f.into(), one_collection: o.into(), one_field_column: "id".into() }
    }

    #[test]
    fn names_follow_the_referencing_collection_and_disambiguate() {
        let fks = [
            fk("film", "language_id", "language"),
            fk("film", "original_language_id", "language"),
            fk("articles", "author", "authors"),
            fk("address", "city_id", "city"),
        ];
        let mut taken = HashMap::new();
        taken.insert("city".to_string(), HashSet::from(["address".to_string()]));
        let names = default_aliases(&fks, &taken);
        assert_eq!(
            names,
            [
                Some("film_language_id".to_string()),
                Some("film_original_language_id".to_string()),
                Some("articles".to_string()),
                Some("address_city_id".to_string()),
            ]
        );
    }
}
