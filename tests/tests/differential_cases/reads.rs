//! Global query parameters, filter operators, functions, aggregates and value formats on one
//! collection (Directus docs "Global Query Parameters", "Filter Rules").

use e2e_tests::differential::{Differential, Req};

/// Filter operators: (operator, field, value as written in the query string).
const OPERATORS: &[(&str, &str, &str)] = &[
    ("_eq", "status", "archived"),
    ("_neq", "status", "published"),
    ("_lt", "rating", "2"),
    ("_lte", "rating", "2"),
    ("_gt", "rating", "4"),
    ("_gte", "rating", "4"),
    ("_in", "rating", "1,5"),
    ("_nin", "rating", "1,2,3"),
    ("_null", "published_at", "true"),
    ("_nnull", "published_at", "true"),
    ("_contains", "title", "deep"),
    ("_ncontains", "title", "e"),
    ("_icontains", "title", "DEEP"),
    ("_starts_with", "title", "Quick"),
    ("_nstarts_with", "title", "Q"),
    ("_istarts_with", "title", "quick"),
    ("_nistarts_with", "title", "q"),
    ("_ends_with", "title", "%2377"),
    ("_nends_with", "title", "7"),
    ("_iends_with", "title", "%2377"),
    ("_niends_with", "title", "7"),
    ("_between", "rating", "2,3"),
    ("_nbetween", "rating", "2,4"),
    ("_empty", "title", "true"),
    ("_nempty", "title", "true"),
    ("_gte", "published_at", "2025-06-01"),
    ("_lt", "published_at", "$NOW"),
    ("_gt", "published_at", "$NOW(-2 years)"),
    ("_eq", "year(published_at)", "2024"),
    ("_in", "month(published_at)", "1,2"),
];

pub async fn run(d: &mut Differential) {
    for (op, field, value) in OPERATORS {
        let path = format!("/items/articles?fields=id&sort=id&limit=7&filter[{field}][{op}]={value}");
        d.check(&format!("operator {op}"), Req::get(&path)).await;
    }
    let nicontains = "/items/articles?fields=id&sort=id&limit=7&filter[title][_nicontains]=E";
    d.deviates("operator _nicontains", "_nicontains", Req::get(nicontains)).await;
    d.deviates("aggregate countAll", "rest-countall", Req::get("/items/articles?aggregate[countAll]")).await;
    let plain = [
        ("default page", "/items/articles"),
        ("limit", "/items/articles?limit=5"),
        ("limit -1", "/items/articles?limit=-1&filter[id][_lte]=7&fields=id,title"),
        ("limit 0", "/items/articles?limit=0"),
        ("offset", "/items/articles?limit=5&offset=10&fields=id"),
        ("page", "/items/articles?limit=5&page=3&fields=id"),
        ("page 0", "/items/articles?limit=2&page=0&fields=id"),
        ("fields list", "/items/articles?fields=id,title,rating&limit=3"),
        ("fields star", "/items/articles?fields=*&limit=2"),
        ("fields array form", "/items/articles?fields[]=id&fields[]=status&limit=2"),
        ("sort", "/items/articles?sort=title&limit=5&fields=id,title"),
        ("sort desc, many", "/items/articles?sort=-rating,id&limit=5&fields=id,rating"),
        ("sort comma list", "/items/articles?sort=status,-id&limit=5&fields=id,status"),
        ("sort nested", "/items/articles?sort=author.name,id&limit=5&fields=id,author.name"),
        ("sort function", "/items/articles?sort=year(published_at),id&filter[published_at][_nnull]=true&limit=4&fields=id"),
        ("search", "/items/articles?search=deep&limit=5&fields=id,title"),
        ("search number", "/items/articles?search=77&limit=5&fields=id"),
        ("json filter", "/items/articles?filter={\"rating\":{\"_eq\":5}}&limit=4&fields=id,rating"),
        ("_and", "/items/articles?filter[_and][0][rating][_eq]=5&filter[_and][1][status][_eq]=draft&limit=4&fields=id"),
        ("_or", "/items/articles?filter[_or][0][id][_eq]=3&filter[_or][1][id][_eq]=8&fields=id"),
        ("implicit _eq", "/items/articles?filter[id]=4&fields=id"),
        ("meta total_count", "/items/articles?meta=total_count&limit=1&fields=id"),
        ("meta filter_count", "/items/articles?meta=filter_count&filter[rating][_eq]=3&limit=1&fields=id"),
        ("meta *", "/items/articles?meta=*&filter[status][_eq]=draft&limit=1&fields=id"),
        ("alias", "/items/articles?alias[heading]=title&fields=id,heading&limit=2"),
        (
            "functions",
            "/items/articles?fields=id,year(published_at),month(published_at),week(published_at),day(published_at),weekday(published_at),hour(published_at),minute(published_at),second(published_at)&filter[id][_in]=2,3&sort=id",
        ),
        ("by key", "/items/articles/3"),
        ("by key, fields", "/items/articles/3?fields=title,rating"),
        ("authors", "/items/authors?limit=3&fields=id,name,email"),
        ("tags", "/items/tags?limit=4&fields=id,name&sort=-id"),
        ("every scalar type", "/items/kinds"),
        ("every scalar type, by key", "/items/kinds/1"),
        ("filter on bigint", "/items/kinds?filter[big][_gt]=0&fields=id,big"),
        ("filter on date", "/items/kinds?filter[day][_lt]=2000-01-01&fields=id,day"),
        ("filter on boolean", "/items/kinds?filter[flag][_eq]=false&fields=id"),
        ("filter on json null", "/items/kinds?filter[doc][_null]=true&fields=id"),
        ("bigint keys", "/items/events?sort=id"),
        ("bigint keys in an O2M list", "/items/kinds?fields=id,events&sort=id"),
        ("bigint key by key", "/items/events/9007199254740993?fields=*,kind.label"),
        ("export json", "/items/articles?fields=title,author.name,id&limit=2&export=json"),
        ("functions on a date", "/items/kinds?fields=id,year(day),month(day),day(day)&sort=id&filter[day][_nnull]=true"),
    ];
    for (label, path) in plain {
        d.check(label, Req::get(path)).await;
    }
    let csv = "/items/articles?fields=title,author.name,id,published_at&limit=3&export=csv";
    d.deviates("export csv", "csv-quoting", Req::get(csv)).await;
    aggregates(d).await;
}

async fn aggregates(d: &mut Differential) {
    let cases = [
        ("count *", "/items/articles?aggregate[count]=*"),
        ("count field", "/items/articles?aggregate[count]=published_at"),
        ("countDistinct", "/items/articles?aggregate[countDistinct]=author"),
        ("sum", "/items/articles?aggregate[sum]=rating"),
        ("sumDistinct", "/items/articles?aggregate[sumDistinct]=rating"),
        ("avg", "/items/articles?aggregate[avg]=rating"),
        ("avgDistinct", "/items/articles?aggregate[avgDistinct]=rating"),
        ("min max", "/items/articles?aggregate[min]=rating&aggregate[max]=published_at"),
        ("several fields", "/items/articles?aggregate[max]=id,rating"),
        ("groupBy", "/items/articles?aggregate[count]=*&groupBy[]=status&sort=status"),
        ("groupBy two", "/items/articles?aggregate[count]=id&groupBy=status,rating&sort=status,rating&limit=6"),
        ("groupBy function", "/items/articles?aggregate[count]=*&groupBy[]=year(published_at)&filter[published_at][_nnull]=true&sort=year(published_at)"),
        ("groupBy with filter", "/items/articles?aggregate[avg]=rating&groupBy[]=author&filter[author][_lte]=3&sort=author"),
        ("aggregate bigint numeric", "/items/kinds?aggregate[sum]=big,dec,small&aggregate[avg]=dec,ratio"),
        ("aggregate dates", "/items/kinds?aggregate[min]=day,at,local&aggregate[max]=clock"),
    ];
    for (label, path) in cases {
        d.check(&format!("aggregate {label}"), Req::get(path)).await;
    }
}
