//! Why Telegram could not be reached, in one sentence: shared by start-up (the first `getMe`)
//! and `volcanic-bot doctor`. A request's URL holds the bot token (`<api_url>/bot<token>/…`), so
//! no text here ever carries it: errors go through [`describe`].

use teloxide::RequestError;
use teloxide::errors::ApiError;
use teloxide::prelude::Requester;

/// `getMe` for `bot`, whose API URL is `api_url`: the bot's own user, or why not.
///
/// # Errors
/// [`GetMeError`], told by its cause.
pub async fn get_me(bot: &teloxide::Bot, api_url: &str) -> Result<teloxide::types::Me, GetMeError> {
    bot.get_me().await.map_err(|e| GetMeError::new(api_url, &e))
}

/// A failed `getMe`, told by its cause: the network, the token, or anything else.
#[derive(Debug, thiserror::Error)]
pub enum GetMeError {
    /// No connection (DNS, refused, timed out, TLS): nothing was said about the token.
    #[error("cannot reach Telegram at {api_url}: {detail}")]
    Unreachable {
        /// `telegram.api_url`.
        api_url: String,
        /// The cause, without the URL.
        detail: String,
    },
    /// Telegram answered `401 Unauthorized` or `404 Not Found` (a malformed token).
    #[error(
        "Telegram at {api_url} refused the bot token: copy it again from @BotFather into \
         TELEGRAM_BOT_TOKEN (or [telegram] token)"
    )]
    TokenRefused {
        /// `telegram.api_url`.
        api_url: String,
    },
    /// Any other failure (an answer that is not the Bot API's, flood control, …).
    #[error("getMe at {api_url} failed: {detail}")]
    Failed {
        /// `telegram.api_url`.
        api_url: String,
        /// What went wrong.
        detail: String,
    },
}

impl GetMeError {
    /// Classifies teloxide's error of `getMe` sent to `api_url`.
    pub fn new(api_url: &str, e: &RequestError) -> GetMeError {
        let api_url = api_url.trim_end_matches('/').to_owned();
        match e {
            RequestError::Api(ApiError::InvalidToken) => GetMeError::TokenRefused { api_url },
            RequestError::Network(n) if !n.is_decode() => GetMeError::Unreachable {
                api_url,
                detail: describe_ref(n.as_ref()),
            },
            RequestError::Network(n) => GetMeError::Failed {
                api_url,
                detail: format!("the answer could not be read: {}", describe_ref(n.as_ref())),
            },
            RequestError::InvalidJson { source, .. } => GetMeError::Failed {
                api_url,
                detail: format!("the answer is not the Bot API's ({source}): is `telegram.api_url` a Bot API server?"),
            },
            RequestError::Api(api) => GetMeError::Failed {
                api_url,
                detail: api.to_string(),
            },
            RequestError::RetryAfter(s) => GetMeError::Failed {
                api_url,
                detail: format!("flood control: retry after {} s", s.seconds()),
            },
            RequestError::MigrateToChatId(_) | RequestError::Io(_) => GetMeError::Failed {
                api_url,
                detail: e.to_string(),
            },
        }
    }

    /// What to do about it (`volcanic-bot doctor` prints it under the failure).
    pub fn fix(&self) -> String {
        match self {
            GetMeError::Unreachable { api_url, .. } => {
                format!("check this machine's network (DNS, firewall, proxy) reaches {api_url}, and `telegram.api_url`")
            }
            GetMeError::TokenRefused { .. } => {
                "ask @BotFather for the token (/token), set TELEGRAM_BOT_TOKEN (the service's environment \
                 file) or [telegram] token"
                    .to_owned()
            }
            GetMeError::Failed { api_url, .. } => {
                format!("check that `telegram.api_url` ({api_url}) is a Bot API server")
            }
        }
    }
}

/// A failed request's error without its URL (`<api_url>/bot<token>/<method>`: the token must
/// never reach a log line), followed by its causes (where reqwest puts "connection refused").
pub fn describe(e: reqwest::Error) -> String {
    describe_ref(&e.without_url())
}

/// [`describe`] for a borrowed error of any HTTP client version (teloxide brings its own
/// reqwest and shares its errors behind an `Arc`): reqwest's `" for url (…)"` part is cut out
/// of each text, then the causes follow.
pub fn describe_ref(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = without_url(&e.to_string());
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = without_url(&cause.to_string());
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// `text` without reqwest's `" for url (…)"` (the URL ends at the first `)`: neither a Bot API
/// URL nor a bot token has one).
fn without_url(text: &str) -> String {
    const MARK: &str = " for url (";
    match text.find(MARK) {
        Some(start) => {
            let rest = &text[start + MARK.len()..];
            let end = rest.find(')').map_or(text.len(), |i| start + MARK.len() + i + 1);
            format!("{}{}", &text[..start], &text[end..])
        }
        None => text.to_owned(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn closed_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    #[tokio::test]
    async fn a_failed_request_is_described_without_its_url_and_with_its_cause() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let url = format!("http://127.0.0.1:{}/bot123456:SECRET-token/getUpdates", closed_port());
        let e = reqwest::Client::new().post(&url).send().await.unwrap_err();
        assert!(e.to_string().contains("SECRET-token"), "reqwest's own text: {e}");
        let by_ref = describe_ref(&e);
        let text = describe(e);
        assert_eq!(text, by_ref);
        assert!(!text.contains("SECRET"), "{text}");
        assert!(text.to_lowercase().contains("connect"), "the cause is kept: {text}");
    }

    #[tokio::test]
    async fn a_closed_port_is_unreachable_and_a_refused_token_says_so() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let api_url = format!("http://127.0.0.1:{}/", closed_port());
        let bot = teloxide::Bot::new("1:SECRET").set_api_url(url::Url::parse(&api_url).unwrap());
        let err = get_me(&bot, &api_url).await.unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, GetMeError::Unreachable { .. }), "{text}");
        assert!(
            text.starts_with(&format!("cannot reach Telegram at {}:", api_url.trim_end_matches('/'))),
            "{text}"
        );
        assert!(!text.contains("SECRET"), "{text}");
        let refused = GetMeError::new(&api_url, &RequestError::Api(ApiError::InvalidToken));
        assert!(refused.to_string().contains("refused the bot token"), "{refused}");
        assert!(refused.fix().contains("@BotFather"));
    }
}
