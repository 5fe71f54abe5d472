-- Schema changes reach every core-service replica without a restart: DDL anywhere in the
-- database and changes to the system tables send NOTIFY cdapi_schema_changed; each replica
-- LISTENs and rebuilds its snapshot.
CREATE FUNCTION notify_schema_changed() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('cdapi_schema_changed', 'ddl');
END
$$;

CREATE FUNCTION notify_settings_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('cdapi_schema_changed', TG_TABLE_NAME);
    RETURN NULL;
END
$$;

CREATE TRIGGER relations_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON relations
    FOR EACH STATEMENT EXECUTE FUNCTION notify_settings_changed();
CREATE TRIGGER collections_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON collections
    FOR EACH STATEMENT EXECUTE FUNCTION notify_settings_changed();

-- Event triggers need a superuser. Without one (a managed database) DDL is not noticed:
-- call SchemaService.ReloadSchema after schema changes instead.
DO $$
BEGIN
    CREATE EVENT TRIGGER cdapi_schema_changed ON ddl_command_end
        EXECUTE FUNCTION cdapi.notify_schema_changed();
EXCEPTION
    WHEN insufficient_privilege THEN
        RAISE WARNING 'cdapi: no event trigger (needs a superuser); reload the schema after DDL with SchemaService.ReloadSchema';
    WHEN duplicate_object THEN
        NULL;
END
$$;
