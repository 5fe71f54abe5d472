-- Fields a project added to system collections (docs/data-model.md "Custom fields on system
-- collections"): Directus lets a project add fields to `directus_users`, `directus_files` and
-- its other system collections. One row per field made by `POST /fields/directus_*` or carried
-- over by `core-service import-directus`; only these may be changed or deleted through
-- `/fields` and `/relations`, so the columns our migrations made stay as the services expect
-- them, and a schema snapshot carries only these of the system collections.
CREATE TABLE custom_system_fields (
    collection text NOT NULL,
    field      text NOT NULL,
    PRIMARY KEY (collection, field)
);
