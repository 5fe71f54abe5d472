-- Demo content for cdapi: a small blog (authors, articles, tags, comments).
--
-- Loaded by deploy/local/up into a fresh database, after `core-service migrate`
-- has created the cdapi.* system tables. All rows are generated from
-- generate_series with fixed arithmetic (no random()), so every load yields the
-- same data and tests/examples can rely on exact values.
--
-- Shapes worth knowing when writing queries against it:
--   * articles: 60% published, 30% draft, 10% archived (by id mod 10);
--     drafts have no published_at; every 13th has no rating; every 50th has no author.
--   * articles_tags: article N has N mod 5 tags (0..4), so some have none.
--   * comments: only on articles 1..1500; articles 1501..2000 have none.

SET client_min_messages = warning;

BEGIN;

CREATE TABLE authors (
    id         serial PRIMARY KEY,
    name       text NOT NULL,
    email      text UNIQUE,
    bio        text,
    created_at timestamptz DEFAULT now()
);

CREATE TABLE articles (
    id           serial PRIMARY KEY,
    status       text NOT NULL DEFAULT 'draft'
                 CHECK (status IN ('draft', 'published', 'archived')),
    title        text NOT NULL,
    slug         text UNIQUE,
    body         text,
    published_at timestamptz,
    rating       int,
    word_count   int,
    author       int REFERENCES authors (id),
    created_at   timestamptz DEFAULT now()
);

CREATE TABLE tags (
    id   serial PRIMARY KEY,
    name text UNIQUE NOT NULL
);

CREATE TABLE articles_tags (
    id          serial PRIMARY KEY,
    articles_id int REFERENCES articles (id) ON DELETE CASCADE,
    tags_id     int REFERENCES tags (id) ON DELETE CASCADE
);

CREATE TABLE comments (
    id          serial PRIMARY KEY,
    article     int REFERENCES articles (id) ON DELETE CASCADE,
    author_name text,
    body        text,
    created_at  timestamptz
);

-- PostgreSQL does not index the referencing side of a foreign key; relational
-- reads (author.*, tags.*, comments) filter on exactly these columns.
CREATE INDEX articles_author_idx ON articles (author);
CREATE INDEX articles_tags_articles_id_idx ON articles_tags (articles_id);
CREATE INDEX articles_tags_tags_id_idx ON articles_tags (tags_id);
CREATE INDEX comments_article_idx ON comments (article);

-- 20 authors: first name by id, surname cycling with a different stride, so
-- names are distinct without a lookup table.
INSERT INTO authors (id, name, email, bio, created_at)
SELECT g,
       first_name || ' ' || last_name,
       lower(first_name) || '.' || lower(last_name) || '@example.com',
       CASE WHEN g % 4 = 0 THEN NULL  -- some authors have no bio
            ELSE first_name || ' writes about '
                 || (ARRAY['databases', 'APIs', 'distributed systems', 'web performance',
                           'security'])[1 + g % 5] || '.'
       END,
       timestamptz '2022-01-01 09:00:00+00' + (g - 1) * interval '9 days'
FROM generate_series(1, 20) AS g,
     LATERAL (SELECT (ARRAY['Ada', 'Grace', 'Alan', 'Barbara', 'Edsger', 'Frances', 'Donald',
                            'Margaret', 'Ken', 'Radia', 'Niklaus', 'Leslie', 'John', 'Karen',
                            'Tony', 'Sophie', 'Dennis', 'Hedy', 'Linus', 'Shafi'])[g] AS first_name,
                     (ARRAY['Lovelace', 'Hopper', 'Turing', 'Liskov', 'Dijkstra', 'Allen',
                            'Knuth'])[1 + (g * 3) % 7] AS last_name) AS n;

-- 25 tags.
INSERT INTO tags (id, name)
SELECT g,
       (ARRAY['postgres', 'rust', 'grpc', 'rest', 'graphql', 'caching', 'redis', 'security',
              'performance', 'testing', 'observability', 'deployment', 'sql', 'indexes',
              'json', 'auth', 'permissions', 'migrations', 'schema', 'relations',
              'pagination', 'filters', 'aggregation', 'search', 'tutorial'])[g]
FROM generate_series(1, 25) AS g;

-- 2000 articles. The body repeats a sentence 1..20 times so word_count varies
-- and matches the body (10 words per sentence plus the topic's).
INSERT INTO articles (id, status, title, slug, body, published_at, rating, word_count,
                      author, created_at)
SELECT g,
       status,
       'Article ' || g || ': ' || topic,
       'article-' || g,
       repeat('Notes on ' || topic || ' from the field, part ' || g || ' of the series. ',
              1 + g % 20),
       CASE WHEN status = 'draft' THEN NULL
            ELSE timestamptz '2023-01-01 08:00:00+00' + g * interval '4 hours' END,
       CASE WHEN g % 13 = 0 THEN NULL ELSE 1 + (g * 7) % 5 END,
       (1 + g % 20) * (10 + array_length(string_to_array(topic, ' '), 1)),
       CASE WHEN g % 50 = 0 THEN NULL ELSE 1 + (g * 7) % 20 END,
       timestamptz '2022-12-01 08:00:00+00' + g * interval '3 hours 17 minutes'
FROM generate_series(1, 2000) AS g,
     LATERAL (SELECT CASE WHEN g % 10 < 6 THEN 'published'
                          WHEN g % 10 < 9 THEN 'draft'
                          ELSE 'archived' END AS status,
                     (ARRAY['query planning', 'connection pooling', 'API design',
                            'schema migrations', 'caching strategies', 'access control',
                            'pagination', 'full text search', 'observability',
                            'load testing', 'error handling'])[1 + g % 11] AS topic) AS a;

-- ~4000 junction rows: article g gets g mod 5 tags; the stride of 7 (coprime
-- with 25) keeps an article's tags distinct.
INSERT INTO articles_tags (articles_id, tags_id)
SELECT g, 1 + (g + k * 7) % 25
FROM generate_series(1, 2000) AS g,
     generate_series(0, 3) AS k
WHERE k < g % 5
ORDER BY g, k;

-- 3000 comments, spread over articles 1..1500 (7 is coprime with 1500, so each
-- of those gets 2 comments).
INSERT INTO comments (article, author_name, body, created_at)
SELECT 1 + (g * 7) % 1500,
       (ARRAY['reader', 'visitor', 'fan', 'critic', 'student', 'engineer'])[1 + g % 6]
           || ' #' || (1 + g % 97),
       (ARRAY['Great read, thanks!', 'I disagree with the second part.',
              'Could you expand on the examples?', 'This saved me hours.',
              'Typo in the third paragraph.'])[1 + g % 5],
       timestamptz '2023-02-01 12:00:00+00' + g * interval '2 hours 11 minutes'
FROM generate_series(1, 3000) AS g
ORDER BY g;

-- Explicit ids above bypassed the sequences; move them past the data so new
-- rows inserted through the API do not collide.
-- (A DO block, so psql prints no result rows.)
DO $$
BEGIN
    PERFORM setval(pg_get_serial_sequence('authors', 'id'), (SELECT max(id) FROM authors));
    PERFORM setval(pg_get_serial_sequence('tags', 'id'), (SELECT max(id) FROM tags));
    PERFORM setval(pg_get_serial_sequence('articles', 'id'), (SELECT max(id) FROM articles));
END
$$;

-- M2M articles <-> tags through articles_tags: each junction FK is a relation
-- whose one_field is the O2M alias on the other side (articles.tags,
-- tags.articles) and whose junction_field names the opposite FK.
INSERT INTO cdapi.relations (many_collection, many_field, one_collection, one_field, junction_field)
VALUES ('articles_tags', 'articles_id', 'articles', 'tags', 'tags_id'),
       ('articles_tags', 'tags_id', 'tags', 'articles', 'articles_id')
ON CONFLICT (many_collection, many_field)
    DO UPDATE SET one_field = EXCLUDED.one_field, junction_field = EXCLUDED.junction_field;

-- Many-to-Any: an article's body is a list of blocks, each a heading or a text block, through
-- the junction articles_blocks (collection = which table, item = that table's key as text).
CREATE TABLE headings (
    id    serial PRIMARY KEY,
    title text NOT NULL,
    level int NOT NULL DEFAULT 2
);
CREATE TABLE text_blocks (
    id   serial PRIMARY KEY,
    body text NOT NULL
);
CREATE TABLE articles_blocks (
    id          serial PRIMARY KEY,
    articles_id int REFERENCES articles(id) ON DELETE CASCADE,
    collection  varchar(64) NOT NULL,
    item        varchar(64) NOT NULL,
    sort        int
);
CREATE INDEX articles_blocks_articles_idx ON articles_blocks (articles_id);
-- Blocks for the first 200 articles: heading, text, text.
INSERT INTO headings (id, title, level)
SELECT g, 'Section ' || g || ': ' || (ARRAY['Why', 'How', 'Results', 'Next steps'])[1 + g % 4], 2 + g % 2
FROM generate_series(1, 200) AS g;
INSERT INTO text_blocks (id, body)
SELECT g, 'Paragraph ' || g || ' explains the idea in plain words.'
FROM generate_series(1, 400) AS g;
INSERT INTO articles_blocks (articles_id, collection, item, sort)
SELECT a, b.collection, b.item, b.sort
FROM generate_series(1, 200) AS a
CROSS JOIN LATERAL (VALUES ('headings', a::text, 1), ('text_blocks', (2 * a - 1)::text, 2), ('text_blocks', (2 * a)::text, 3)) AS b(collection, item, sort);
DO $$
BEGIN
    PERFORM setval(pg_get_serial_sequence('headings', 'id'), 200);
    PERFORM setval(pg_get_serial_sequence('text_blocks', 'id'), 400);
END
$$;
INSERT INTO cdapi.relations (many_collection, many_field, one_collection, one_field, junction_field, one_collection_field, one_allowed_collections)
VALUES ('articles_blocks', 'articles_id', 'articles', 'blocks', 'item', NULL, NULL),
       ('articles_blocks', 'item', NULL, NULL, 'articles_id', 'collection', ARRAY['headings', 'text_blocks'])
ON CONFLICT (many_collection, many_field) DO UPDATE
    SET one_field = EXCLUDED.one_field, junction_field = EXCLUDED.junction_field,
        one_collection_field = EXCLUDED.one_collection_field, one_allowed_collections = EXCLUDED.one_allowed_collections;

-- A singleton collection: the site's settings, one row, read as a plain object.
CREATE TABLE settings (
    id          serial PRIMARY KEY,
    site_name   text NOT NULL,
    tagline     text,
    per_page    int NOT NULL DEFAULT 10,
    featured    int REFERENCES articles(id) ON DELETE SET NULL
);
INSERT INTO settings (site_name, tagline, per_page, featured)
VALUES ('cdapi demo', 'Content served from PostgreSQL in one statement per read', 20, 1);
INSERT INTO cdapi.collections (collection, singleton) VALUES ('settings', true)
ON CONFLICT (collection) DO UPDATE SET singleton = EXCLUDED.singleton;

-- Collection metadata, as a Directus project has it: the Data Studio lists only collections
-- with a metadata row, in `sort` order, with these icons; junctions stay hidden. Content
-- Versioning is on for the content collections (a version can only be made where it is on).
INSERT INTO cdapi.collections (collection, singleton, hidden, meta) VALUES
    ('articles', false, false, '{"icon": "article", "display_template": "{{title}}", "sort": 1, "versioning": true}'),
    ('authors', false, false, '{"icon": "person", "display_template": "{{name}}", "sort": 2, "versioning": true}'),
    ('tags', false, false, '{"icon": "label", "display_template": "{{name}}", "sort": 3, "versioning": true}'),
    ('comments', false, false, '{"icon": "chat", "display_template": "{{author_name}}", "sort": 4, "versioning": true}'),
    ('headings', false, false, '{"icon": "title", "display_template": "{{title}}", "sort": 5, "versioning": true}'),
    ('text_blocks', false, false, '{"icon": "notes", "sort": 6, "versioning": true}'),
    ('articles_tags', false, true, '{"icon": "import_export", "sort": 7}'),
    ('articles_blocks', false, true, '{"icon": "import_export", "sort": 8}')
ON CONFLICT (collection) DO NOTHING;
UPDATE cdapi.collections SET meta = coalesce(meta, '{}') || '{"icon": "settings", "sort": 9, "singleton": true, "versioning": true}' WHERE collection = 'settings';

COMMIT;

-- Fresh statistics so the first API queries get sensible plans.
ANALYZE authors, articles, tags, articles_tags, comments, settings, headings, text_blocks, articles_blocks;
