//! Relational reads: M2O, O2M and M2M fields, wildcards, `deep`, relational filters and sorts
//! (Directus docs "Relations", "Global Query Parameters" `fields`, `deep`, `backlink`).

use e2e_tests::differential::{Differential, Req};

pub async fn run(d: &mut Differential) {
    let cases = [
        ("M2O star", "/items/articles?fields=id,author.*&limit=2"),
        ("M2O fields", "/items/articles?fields=id,title,author.name&limit=3"),
        ("M2O and M2M", "/items/articles/3?fields=*,author.name,tags.tags_id.name"),
        ("star star", "/items/articles?fields=*.*&limit=2&filter[id][_in]=4,5"),
        ("M2M default", "/items/articles?fields=id,tags&limit=4"),
        ("M2M junction star", "/items/articles?fields=id,tags.*&filter[id][_in]=3,4"),
        ("M2M two levels", "/items/articles/4?fields=id,tags.tags_id.*"),
        ("M2M from the other side", "/items/tags/3?fields=id,name,articles.articles_id.id&deep[articles][_limit]=4"),
        ("O2M default", "/items/authors/3"),
        ("O2M fields", "/items/authors/3?fields=id,articles.id,articles.title&deep[articles][_limit]=3"),
        ("deep sort", "/items/authors/3?fields=id,articles.id&deep[articles][_sort]=-id&deep[articles][_limit]=4"),
        ("deep filter", "/items/authors/3?fields=id,articles.id,articles.rating&deep[articles][_filter][rating][_eq]=5&deep[articles][_limit]=3"),
        ("deep offset", "/items/authors/3?fields=articles.id&deep[articles][_limit]=2&deep[articles][_offset]=2"),
        ("deep json", "/items/authors/3?fields=articles.id&deep={\"articles\":{\"_limit\":2,\"_sort\":[\"id\"]}}"),
        ("O2M then M2O", "/items/authors/5?fields=name,articles.author.name&deep[articles][_limit]=2"),
        ("count of O2M", "/items/authors?fields=id,count(articles)&limit=3"),
        ("count of M2M", "/items/articles?fields=id,count(tags)&limit=5"),
        ("backlink true", "/items/authors/3?fields=id,articles.*&backlink=true&deep[articles][_limit]=1"),
        ("M2O filter", "/items/articles?filter[author][name][_eq]=Alice Smith&fields=id&limit=5"),
        ("M2O filter on key", "/items/articles?filter[author][_eq]=4&fields=id&limit=5"),
        ("M2M filter", "/items/articles?filter[tags][tags_id][name][_eq]=rust&fields=id&limit=5&sort=id"),
        ("O2M _some", "/items/authors?filter[articles][_some][rating][_eq]=5&fields=id&limit=5"),
        ("O2M _none", "/items/authors?filter[articles][_none][rating][_gte]=1&fields=id"),
        ("M2M _none", "/items/articles?filter[tags][_none][tags_id][name][_eq]=rust&fields=id&limit=5"),
        ("O2M filter implicit _some", "/items/authors?filter[articles][title][_contains]=tuning&fields=id&limit=5"),
        ("alias of a relation", "/items/articles?alias[writer]=author&fields=id,writer.name&limit=2"),
        ("meta with relational filter", "/items/articles?filter[author][name][_starts_with]=Chen&meta=filter_count&fields=id&limit=1"),
        ("aggregate on relation filter", "/items/articles?aggregate[count]=*&filter[author][name][_eq]=Dana Novak"),
    ];
    for (label, path) in cases {
        d.check(label, Req::get(path)).await;
    }
    let backlink = "/items/authors/3?fields=id,articles.*&backlink=false&deep[articles][_limit]=1";
    d.deviates("backlink false", "backlink", Req::get(backlink)).await;
    // Directus's key order: plain values first, then related items and lists.
    let orders = [
        ("key order, list before star", "/items/articles/3?fields=tags,id,author.name,title"),
        ("key order, path before star", "/items/articles/3?fields=author.name,*"),
        ("key order, star in the middle", "/items/authors/2?fields=name,*,articles.id&deep[articles][_limit]=2"),
        ("key order, functions", "/items/authors/2?fields=count(articles),name,id"),
    ];
    for (label, path) in orders {
        d.check(label, Req::get(path)).await;
    }
}
