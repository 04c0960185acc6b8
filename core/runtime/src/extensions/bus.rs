//! The event bus shared by the extensions of one session.

use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use volcanic_abstractions::extensions::{EventBus, Subscription};

type ChannelHandler = Arc<dyn Fn(&Value) + Send + Sync>;
type Channels = HashMap<String, Vec<(u64, ChannelHandler)>>;

/// `emit(channel, data)` calls every handler of `channel` synchronously, in subscription order.
/// A panicking handler is logged and the others still run.
#[derive(Default)]
pub struct Bus {
    channels: Arc<RwLock<Channels>>,
    next: AtomicU64,
}

impl Bus {
    /// Removes every subscription.
    pub fn clear(&self) {
        self.channels.write().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

impl EventBus for Bus {
    fn emit(&self, channel: &str, data: Value) {
        let handlers: Vec<ChannelHandler> = self
            .channels
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(channel)
            .map(|l| l.iter().map(|(_, h)| h.clone()).collect())
            .unwrap_or_default();
        for h in handlers {
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h(&data))).is_err() {
                tracing::warn!(channel, "event bus handler panicked");
            }
        }
    }

    fn on(&self, channel: &str, handler: ChannelHandler) -> Subscription {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.channels
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .entry(channel.to_owned())
            .or_default()
            .push((id, handler));
        let channel = channel.to_owned();
        let weak = Arc::downgrade(&self.channels);
        Subscription::new(move || {
            if let Some(channels) = weak.upgrade()
                && let Some(l) = channels.write().unwrap_or_else(|e| e.into_inner()).get_mut(&channel)
            {
                l.retain(|(i, _)| *i != id);
            }
        })
    }
}
