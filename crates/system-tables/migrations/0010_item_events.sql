-- Item events (issue 19, realtime): every committed write to a served collection, whoever made
-- it (the API, any replica, plain SQL, another tool), is announced on the channel
-- `cdapi_items` as `{"c": collection, "e": "create"|"update"|"delete", "k": [key text, ...]}`.
-- core-service installs three statement-level triggers per collection table that call this
-- function with the collection's name and its key expression over `t0` (the same text form
-- as the API's keys); NOTIFY is transactional, so a rolled-back write announces nothing.
-- Payloads stay under Postgres's 8000-byte limit: keys are sent in batches of about 6000
-- bytes; a key longer than 1000 characters is left out of the announcement (never failing the
-- write).
CREATE FUNCTION notify_item_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    event text := CASE TG_OP WHEN 'INSERT' THEN 'create' WHEN 'UPDATE' THEN 'update' ELSE 'delete' END;
    rows_name text := CASE TG_OP WHEN 'DELETE' THEN 'old_rows' ELSE 'new_rows' END;
    head text := '{"c":' || to_json(TG_ARGV[0])::text || ',"e":"' || event || '","k":[';
    batch text := '';
    k text;
BEGIN
    FOR k IN EXECUTE format('SELECT (%s)::text FROM %I AS t0', TG_ARGV[1], rows_name) LOOP
        CONTINUE WHEN k IS NULL OR length(k) > 1000;
        IF length(batch) > 6000 THEN
            PERFORM pg_notify('cdapi_items', head || batch || ']}');
            batch := '';
        END IF;
        batch := batch || CASE WHEN batch = '' THEN '' ELSE ',' END || to_json(k)::text;
    END LOOP;
    IF batch <> '' THEN
        PERFORM pg_notify('cdapi_items', head || batch || ']}');
    END IF;
    RETURN NULL;
END
$$;
