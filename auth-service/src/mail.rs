//! Sending mail over SMTP with lettre (EMAIL_SMTP_*: host, port, TLS mode, credentials, from).

use crate::config::{MailSettings, SmtpTls};
use lettre::message::{Mailbox, header::ContentType};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use std::time::Duration;

/// An SMTP client.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl Mailer {
    /// A client for `settings` (nothing is connected yet). Errors: a bad host or EMAIL_FROM.
    pub fn new(settings: &MailSettings, sender_name: &str) -> anyhow::Result<Self> {
        let builder = match settings.tls {
            SmtpTls::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(settings.host.clone()),
            SmtpTls::StartTls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&settings.host)?,
            SmtpTls::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&settings.host)?,
        };
        let mut builder = builder.port(settings.port).timeout(Some(Duration::from_secs(15)));
        if let Some((user, password)) = &settings.credentials {
            builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
        }
        let address = settings.from.parse().map_err(|e| anyhow::anyhow!("EMAIL_FROM {:?}: {e}", settings.from))?;
        Ok(Self { transport: builder.build(), from: Mailbox::new(Some(sender_name.to_owned()), address) })
    }

    /// Sends a plain-text mail. Errors: a bad recipient address, or the SMTP exchange failed.
    pub async fn send(&self, to: &str, subject: &str, body: String) -> anyhow::Result<()> {
        let message =
            Message::builder().from(self.from.clone()).to(Mailbox::new(None, to.parse()?)).subject(subject).header(ContentType::TEXT_PLAIN).body(body)?;
        self.transport.send(message).await?;
        Ok(())
    }
}
