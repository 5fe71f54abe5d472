//! Notification mail (Directus's NotificationsService, checked against 11.3.5; docs/history.md "Comments
//! and notifications"): every new `directus_notifications` row — a mention in a comment, or one
//! created through the API — is mailed to its recipient when they are active, have an email
//! and `email_notifications` is on. The database queues each new row in
//! `cdapi.notification_mail` and wakes this task on `cdapi_notification_mail` (migration 0015);
//! it also looks every [`POLL`]. Replicas take rows with `SKIP LOCKED`, so each is mailed once.
//! A row is taken before its mail is sent and a failed send is logged, not retried (as
//! Directus). Without EMAIL_SMTP_HOST the queue is emptied without sending.
//!
//! The mail is plain text: the notification's subject, its message without HTML tags, and a
//! link to the item (`<PUBLIC_URL>/admin/content/<collection>/<item>`) when it names one.

use crate::Auth;
use std::sync::Arc;
use std::time::Duration;

/// The channel the database wakes this task on.
pub const CHANNEL: &str = "cdapi_notification_mail";

/// How often the queue is looked at without a wake-up.
pub const POLL: Duration = Duration::from_secs(60);

/// Rows taken per statement.
const BATCH: i64 = 20;

/// Starts the task (it runs for the life of the process; connection errors are retried).
pub fn spawn(auth: Arc<Auth>) {
    tokio::spawn(async move {
        loop {
            if let Err(e) = listen(&auth).await {
                tracing::warn!(error = %e, "notification mail: listening failed; retrying in 5 s");
            }
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    });
}

async fn listen(auth: &Auth) -> anyhow::Result<()> {
    let mut listener = sqlx::postgres::PgListener::connect_with(&auth.pool).await?;
    listener.listen(CHANNEL).await?;
    loop {
        drain(auth).await?;
        if let Ok(notice) = tokio::time::timeout(POLL, listener.recv()).await {
            notice?;
        }
    }
}

/// One queued notification, as mailed.
#[derive(sqlx::FromRow)]
struct Queued {
    email: String,
    subject: String,
    message: Option<String>,
    collection: Option<String>,
    item: Option<String>,
}

/// Takes and mails queued notifications until none is left.
async fn drain(auth: &Auth) -> anyhow::Result<()> {
    loop {
        let mut tx = auth.pool.begin().await?;
        let taken: Vec<i32> = sqlx::query_scalar(
            "DELETE FROM cdapi.notification_mail WHERE notification IN \
             (SELECT notification FROM cdapi.notification_mail ORDER BY notification LIMIT $1 FOR UPDATE SKIP LOCKED) RETURNING notification",
        )
        .bind(BATCH)
        .fetch_all(&mut *tx)
        .await?;
        if taken.is_empty() {
            return Ok(());
        }
        let queued: Vec<Queued> = sqlx::query_as(
            "SELECT u.email, n.subject, n.message, n.collection, n.item FROM cdapi.notifications n JOIN cdapi.users u ON u.id = n.recipient \
             WHERE n.id = ANY($1) AND u.status = 'active' AND u.email_notifications AND u.email <> '' ORDER BY n.id",
        )
        .bind(&taken)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        let Some(mailer) = &auth.mailer else { continue };
        for q in queued {
            let body = body(&q, &auth.settings.public_url);
            if let Err(e) = mailer.send(&q.email, &q.subject, body).await {
                tracing::warn!(error = %e, "notification mail could not be sent");
            }
        }
    }
}

/// The plain-text body: the message without HTML tags, then the item's address.
fn body(q: &Queued, public_url: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for c in q.message.as_deref().unwrap_or_default().chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    let mut out = text.trim().to_owned();
    if let (Some(c), Some(i)) = (&q.collection, &q.item) {
        out.push_str(&format!("\n\n{public_url}/admin/content/{c}/{i}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_drops_tags_and_links_the_item() {
        let q = Queued {
            email: "a@example.com".into(),
            subject: "s".into(),
            message: Some("\nHello A,\n\n> <em>A</em> see\n\n<a href=\"/x\">Click here to view.</a>\n".into()),
            collection: Some("articles".into()),
            item: Some("7".into()),
        };
        assert_eq!(body(&q, "https://cms.example.com"), "Hello A,\n\n> A see\n\nClick here to view.\n\nhttps://cms.example.com/admin/content/articles/7\n");
    }
}
