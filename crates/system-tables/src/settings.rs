//! The `directus_settings` singleton (`cdapi.settings`, one row; migration 0016): what the
//! services read of it themselves, outside any caller's permissions.

/// `/server/info`'s `project` (Directus 11 `ServerService.serverInfo`): the public fields of the
/// settings row as a JSON object text; `None` when the row is missing. Errors: database.
pub async fn project_info<'e>(db: impl sqlx::PgExecutor<'e>) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT json_build_object(
            'project_name', project_name, 'project_descriptor', project_descriptor,
            'project_logo', project_logo, 'project_color', project_color,
            'default_appearance', default_appearance, 'default_theme_light', default_theme_light,
            'default_theme_dark', default_theme_dark, 'theme_light_overrides', theme_light_overrides,
            'theme_dark_overrides', theme_dark_overrides, 'default_language', default_language,
            'public_foreground', public_foreground, 'public_background', public_background,
            'public_favicon', public_favicon, 'public_note', public_note, 'custom_css', custom_css,
            'public_registration', public_registration,
            'public_registration_verify_email', public_registration_verify_email)::text
         FROM cdapi.settings ORDER BY id LIMIT 1",
    )
    .fetch_optional(db)
    .await
}

/// The settings' `storage_asset_presets` (JSON text) and `storage_asset_transform`; both `None`
/// without a settings row. Errors: database.
pub async fn asset_settings<'e>(db: impl sqlx::PgExecutor<'e>) -> sqlx::Result<(Option<String>, Option<String>)> {
    let row: Option<(Option<String>, Option<String>)> =
        sqlx::query_as("SELECT storage_asset_presets::text, storage_asset_transform FROM cdapi.settings ORDER BY id LIMIT 1").fetch_optional(db).await?;
    Ok(row.unwrap_or((None, None)))
}

/// The settings' `auth_login_attempts`: consecutive failed sign-ins an account may have before
/// it is suspended; `None` = unlimited (also without a settings row). Errors: database.
pub async fn login_attempts<'e>(db: impl sqlx::PgExecutor<'e>) -> sqlx::Result<Option<i32>> {
    let row: Option<Option<i32>> = sqlx::query_scalar("SELECT auth_login_attempts FROM cdapi.settings ORDER BY id LIMIT 1").fetch_optional(db).await?;
    Ok(row.flatten())
}
