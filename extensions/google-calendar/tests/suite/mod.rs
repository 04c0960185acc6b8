//! Shared setup: a Google double, a connections service on a temporary state dir, and a
//! recording redactor.

mod connect;
mod tool;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use volcanic_abstractions::processes::SecretRedactor;
use volcanic_google_calendar::{CalendarArgs, ChatRef, Connected, GoogleCalendarConnections, GoogleConfig};
use volcanic_testkit::GoogleServer;

/// Remembers the secrets it was given.
#[derive(Debug, Default)]
pub struct Secrets(Mutex<Vec<String>>);

impl Secrets {
    pub fn all(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl SecretRedactor for Secrets {
    fn redact(&self, text: &str) -> String {
        self.all()
            .iter()
            .fold(text.to_owned(), |t, s| t.replace(s, "[REDACTED]"))
    }
    fn add_secret(&self, value: &str) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(value.to_owned());
    }
    fn remove_secret(&self, value: &str) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).retain(|s| s != value);
    }
}

pub struct Setup {
    pub google: GoogleServer,
    pub connections: Arc<GoogleCalendarConnections>,
    pub secrets: Arc<Secrets>,
    pub dir: tempfile::TempDir,
}

pub fn chat(id: i64) -> ChatRef {
    ChatRef {
        id,
        key: id.to_string(),
    }
}

pub async fn setup(public_url: Option<&str>) -> Setup {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let google = GoogleServer::start("client-1", "client-secret-1")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    google.set_email("ann@example.com");
    let mut config = GoogleConfig::new("client-1", "client-secret-1");
    config.auth_url = google.auth_url();
    config.token_url = google.token_url();
    config.revoke_url = google.revoke_url();
    config.api_base_url = google.api_base_url();
    config.public_url = public_url.map(str::to_owned);
    config.backoff = Duration::from_millis(20);
    config.timeout = Duration::from_secs(2);
    if let Some(p) = public_url {
        google.register_redirect_uri(&format!("{p}/oauth/google/callback"));
    }
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let secrets = Arc::new(Secrets::default());
    let connections =
        GoogleCalendarConnections::new(Some(config), dir.path(), secrets.clone()).unwrap_or_else(|e| panic!("{e}"));
    Setup {
        google,
        connections,
        secrets,
        dir,
    }
}

impl Setup {
    /// Connects `chat` by the paste-back flow.
    pub async fn connect(&self, chat: &ChatRef) -> Connected {
        let link = self
            .connections
            .connect(chat.clone(), 7, None)
            .unwrap_or_else(|e| panic!("{e}"));
        let location = self.google.consent(&link.url).await.unwrap_or_else(|e| panic!("{e:?}"));
        self.connections
            .finish_paste(chat, 7, &location)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }
}

pub fn args(v: serde_json::Value) -> CalendarArgs {
    serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
}
