-- Comments on items and the notification inbox (Directus 11's `directus_comments` and
-- `directus_notifications`, with its columns; README "Comments and notifications"). A comment
-- that mentions a user (`@<user id>`) notifies them; a notification mails its recipient when
-- they have an email and `email_notifications` (auth-service sends it, from `notification_mail`).
CREATE TABLE comments (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    collection   varchar(64) NOT NULL,
    item         varchar(255) NOT NULL,
    comment      text NOT NULL,
    date_created timestamptz DEFAULT now(),
    date_updated timestamptz DEFAULT now(),
    user_created uuid REFERENCES users (id) ON DELETE SET NULL,
    user_updated uuid REFERENCES users (id) ON DELETE SET NULL
);
CREATE INDEX comments_item ON comments (collection, item);

CREATE TABLE notifications (
    id         serial PRIMARY KEY,
    timestamp  timestamptz DEFAULT now(),
    status     varchar(255) DEFAULT 'inbox',
    recipient  uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    sender     uuid REFERENCES users (id) ON DELETE SET NULL,
    subject    varchar(255) NOT NULL,
    message    text,
    collection varchar(64),
    item       varchar(255)
);
CREATE INDEX notifications_recipient ON notifications (recipient, status);

ALTER TABLE users ADD COLUMN email_notifications boolean DEFAULT true;

-- The fields the server fills, as Directus declares them.
INSERT INTO fields (collection, field, meta) VALUES
    ('directus_comments', 'date_created', '{"special": ["date-created"]}'),
    ('directus_comments', 'date_updated', '{"special": ["date-updated"]}'),
    ('directus_comments', 'user_created', '{"special": ["user-created"]}'),
    ('directus_comments', 'user_updated', '{"special": ["user-updated"]}'),
    ('directus_notifications', 'timestamp', '{"special": ["date-created"]}')
ON CONFLICT (collection, field) DO NOTHING;

-- No reverse fields on users (Directus has none).
INSERT INTO relations (many_collection, many_field, one_collection, one_field) VALUES
    ('directus_comments', 'user_created', 'directus_users', NULL),
    ('directus_comments', 'user_updated', 'directus_users', NULL),
    ('directus_notifications', 'recipient', 'directus_users', NULL),
    ('directus_notifications', 'sender', 'directus_users', NULL)
ON CONFLICT (many_collection, many_field) DO NOTHING;

-- Mail to send: one row per new notification, taken (and deleted) by auth-service, which is
-- woken on `cdapi_notification_mail` and also looks every minute.
CREATE TABLE notification_mail (
    notification integer PRIMARY KEY REFERENCES notifications (id) ON DELETE CASCADE
);

CREATE FUNCTION queue_notification_mail() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO cdapi.notification_mail (notification) SELECT id FROM new_rows ON CONFLICT DO NOTHING;
    PERFORM pg_notify('cdapi_notification_mail', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER notifications_mail AFTER INSERT ON notifications
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION queue_notification_mail();
