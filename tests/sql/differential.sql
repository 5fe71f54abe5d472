-- Loaded after ../shared/bench/blog.sql into both our database and the Directus peer's
-- (tests/tests/directus_differential.rs): one table holding every scalar type a client reads,
-- so that value formatting is compared too.
SET client_min_messages = warning;
SET TIME ZONE 'UTC';

CREATE TABLE kinds (
  id      serial PRIMARY KEY,
  label   varchar(20) NOT NULL DEFAULT 'none',
  small   smallint,
  big     bigint,
  dec     numeric(10, 2),
  ratio   double precision,
  flag    boolean,
  day     date,
  clock   time,
  local   timestamp,
  at      timestamptz,
  doc     json,
  docb    jsonb,
  uid     uuid,
  article integer
);

INSERT INTO kinds (label, small, big, dec, ratio, flag, day, clock, local, at, doc, docb, uid, article) VALUES
  ('first', 7, 9007199254740993, 12.50, 1.5, true, '2024-03-14', '10:52:07', '2024-03-14 10:52:07.987654',
   '2024-03-14 10:52:07.123456+02', '{"b": 1, "a": [1, 2]}', '{"b": 1, "a": [1, 2]}', '123e4567-e89b-12d3-a456-426614174000', 1),
  ('second', -3, -42, 0.05, -0.25, false, '1999-12-31', '23:59:59', '1999-12-31 23:59:59', '1999-12-31 23:59:59+00',
   '[]', '{}', NULL, 2),
  ('empty', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);

-- bigint keys, read as strings, also in the O2M list of keys `kinds.events`.
CREATE TABLE events (
  id    bigint PRIMARY KEY,
  kind  integer REFERENCES kinds (id),
  label text
);
INSERT INTO events VALUES (9007199254740993, 1, 'big'), (2, 1, 'small'), (3, 2, 'other');
