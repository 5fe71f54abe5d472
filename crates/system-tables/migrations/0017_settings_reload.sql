-- A change of the settings reloads the core's snapshot, which carries the asset rules
-- (`storage_asset_presets`, `storage_asset_transform`; core-service files::asset_settings).
CREATE TRIGGER settings_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON settings
    FOR EACH STATEMENT EXECUTE FUNCTION notify_settings_changed();
