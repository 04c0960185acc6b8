//! `slow-input`: an `input` handler that awaits before a message goes on.

use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;
use volcanic_abstractions::extensions::events::InputEvent;
use volcanic_abstractions::extensions::{BoxError, Extension, ExtensionApi, ExtensionApiExt};

/// Longest hold (10 s): a typo in the marker must not stall a chat.
pub const MAX_HOLD: Duration = Duration::from_secs(10);

/// Holds a message whose text contains `[wait <n>ms]` for n milliseconds (at most [`MAX_HOLD`])
/// in its `input` handler, then lets it through unchanged. It stands in for a handler that awaits
/// a service (a translator, a spam check) and shows that such a handler never reorders a chat's
/// messages: a host hands the next message over only once this one has its place.
#[derive(Debug, Default)]
pub struct SlowInput;

/// The hold a text asks for: the first `[wait <n>ms]` in it, capped at [`MAX_HOLD`].
pub fn hold(text: &str) -> Option<Duration> {
    let rest = &text[text.find("[wait ")? + "[wait ".len()..];
    let millis: u64 = rest[..rest.find("ms]")?].trim().parse().ok()?;
    Some(Duration::from_millis(millis).min(MAX_HOLD))
}

#[async_trait]
impl Extension for SlowInput {
    fn name(&self) -> &str {
        "slow-input"
    }

    async fn activate(&self, api: Arc<dyn ExtensionApi>) -> Result<(), BoxError> {
        api.on::<InputEvent, _>(|e, _ctx, cancel| {
            Box::pin(async move {
                if let Some(wait) = hold(&e.text) {
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = cancel.cancelled() => {}
                    }
                }
                Ok(())
            })
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_gives_the_hold() {
        let cases = [
            ("[wait 300ms] first", Some(Duration::from_millis(300))),
            ("Ada, 10:00: [wait 5 ms] hi", Some(Duration::from_millis(5))),
            ("[wait 999999ms]", Some(MAX_HOLD)),
            ("[wait soon ms]", None),
            ("[wait 300", None),
            ("no marker", None),
        ];
        for (text, want) in cases {
            assert_eq!(hold(text), want, "{text:?}");
        }
    }
}
