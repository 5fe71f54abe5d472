-- Reads of `cast-json` fields (Directus's `meta.special`): a text value read as the JSON it
-- holds, or as the text itself when it holds none (Directus parses and keeps the string on
-- failure). PostgreSQL 15 has no error-free JSON parse, hence the exception block.
CREATE FUNCTION json_or_text(value text) RETURNS json
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN value::json;
EXCEPTION WHEN others THEN
    RETURN to_json(value);
END
$$;
