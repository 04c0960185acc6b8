//! `ModelRegistry`: providers, `provider/id` lookup, API keys, and the guarded call.

use super::normalize::normalize_transcript;
use futures::StreamExt;
use std::collections::HashMap;
use std::sync::Arc;
use volcanic_abstractions::messages::{AssistantMessage, StopReason};
use volcanic_abstractions::model::{Api, InputKind, Model, ModelCost};
use volcanic_abstractions::provider::{
    AssistantMessageEvent, Provider, ProviderContext, ProviderRegistration, ProviderStream, StreamOptions,
};

/// Errors of model lookup and key resolution.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ModelError {
    /// No such `provider/id`.
    #[error("unknown model `{0}`: use provider/id, e.g. anthropic/claude-sonnet-4-5 (list them with /model)")]
    UnknownModel(String),
    /// The provider needs a key and none is set.
    #[error("no API key for provider `{provider}`: set the environment variable {env}")]
    MissingApiKey {
        /// Provider name.
        provider: String,
        /// Variable to set.
        env: String,
    },
    /// A custom provider names an API no provider implements.
    #[error(
        "provider `{provider}`: unknown api `{api}` (use anthropic-messages, openai-completions or openai-responses)"
    )]
    UnknownApi {
        /// Provider name.
        provider: String,
        /// The API name.
        api: String,
    },
}

/// A model of a custom provider from the config file.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomModelConfig {
    /// Model id.
    pub id: String,
    /// Context window (tokens).
    pub context_window: u64,
    /// Output limit (tokens).
    pub max_tokens: u64,
    /// Whether it reasons.
    pub reasoning: bool,
    /// Accepted inputs.
    pub input: Vec<InputKind>,
    /// Prices (USD per million tokens).
    pub cost: ModelCost,
}

/// A custom provider from the config file (`[providers.NAME]`).
#[derive(Debug, Clone, PartialEq)]
pub struct CustomProviderConfig {
    /// Provider name.
    pub name: String,
    /// Wire API.
    pub api: Api,
    /// Base URL.
    pub base_url: String,
    /// Literal key.
    pub api_key: Option<String>,
    /// Env variable with the key.
    pub api_key_env: Option<String>,
    /// Models.
    pub models: Vec<CustomModelConfig>,
}

type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Providers and their models for one session (cheap to clone: a session starts from the
/// host's registry and adds what its extensions register).
#[derive(Clone)]
pub struct ModelRegistry {
    apis: HashMap<String, Arc<dyn Provider>>,
    providers: Vec<ProviderRegistration>,
    env: EnvLookup,
}

impl Default for ModelRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ModelRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelRegistry")
            .field("apis", &self.apis.keys().collect::<Vec<_>>())
            .field("providers", &self.providers)
            .finish()
    }
}

impl ModelRegistry {
    /// An empty registry reading keys from the process environment.
    pub fn new() -> Self {
        ModelRegistry {
            apis: HashMap::new(),
            providers: Vec::new(),
            env: Arc::new(|k| std::env::var(k).ok().filter(|v| !v.is_empty())),
        }
    }

    /// Replaces the environment lookup used for `api_key_env` (tests, hosts with their own source).
    pub fn with_env(mut self, env: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        self.env = Arc::new(env);
        self
    }

    /// Registers the implementation of a wire API, used by custom providers of that API.
    pub fn register_api(&mut self, provider: Arc<dyn Provider>) {
        self.apis.insert(provider.api().as_str().to_owned(), provider);
    }

    /// Registers a provider; a later registration of the same name replaces it.
    pub fn register_provider(&mut self, registration: ProviderRegistration) {
        self.register_api(registration.provider.clone());
        self.providers.retain(|p| p.name != registration.name);
        self.providers.push(registration);
    }

    /// Removes a provider.
    pub fn unregister_provider(&mut self, name: &str) {
        self.providers.retain(|p| p.name != name);
    }

    /// Adds a provider from the config file; its API must be registered.
    pub fn add_custom_provider(&mut self, cfg: &CustomProviderConfig) -> Result<(), ModelError> {
        let provider = self
            .apis
            .get(cfg.api.as_str())
            .cloned()
            .ok_or_else(|| ModelError::UnknownApi {
                provider: cfg.name.clone(),
                api: cfg.api.as_str().to_owned(),
            })?;
        // A section for a built-in provider overrides its key and base URL; a listed model is
        // added, or replaces the catalogue's model of the same id (keeping its display name).
        let mut models: Vec<Model> = self
            .providers
            .iter()
            .find(|p| p.name == cfg.name)
            .map(|p| p.models.clone())
            .unwrap_or_default();
        for m in &mut models {
            if !cfg.base_url.is_empty() {
                m.base_url = cfg.base_url.clone();
            }
        }
        // Without a base URL of its own, a built-in provider's added models use its catalogue's.
        let base_url = match (cfg.base_url.is_empty(), models.first()) {
            (true, Some(m)) => m.base_url.clone(),
            _ => cfg.base_url.clone(),
        };
        for m in &cfg.models {
            let name = models
                .iter()
                .find(|x| x.id == m.id)
                .map_or_else(|| m.id.clone(), |x| x.name.clone());
            models.retain(|x| x.id != m.id);
            models.push(Model {
                id: m.id.clone(),
                name,
                provider: cfg.name.clone(),
                api: cfg.api.clone(),
                base_url: base_url.clone(),
                reasoning: m.reasoning,
                input: m.input.clone(),
                cost: m.cost,
                context_window: m.context_window,
                max_tokens: m.max_tokens,
            });
        }
        self.register_provider(ProviderRegistration {
            name: cfg.name.clone(),
            provider,
            models,
            api_key: cfg.api_key.clone(),
            api_key_env: cfg.api_key_env.clone(),
        });
        Ok(())
    }

    /// Every model, in registration order.
    pub fn models(&self) -> Vec<Model> {
        self.providers.iter().flat_map(|p| p.models.iter().cloned()).collect()
    }

    /// Models whose provider has a key (or needs none).
    pub fn available(&self) -> Vec<Model> {
        self.providers
            .iter()
            .filter(|p| self.key_of(p).is_ok())
            .flat_map(|p| p.models.iter().cloned())
            .collect()
    }

    /// A model by `provider/id` (or a bare id when exactly one provider has it).
    pub fn find(&self, key: &str) -> Option<Model> {
        if let Some((provider, id)) = key.split_once('/') {
            let p = self.providers.iter().find(|p| p.name == provider)?;
            return p.models.iter().find(|m| m.id == id).cloned();
        }
        let mut hits = self.models().into_iter().filter(|m| m.id == key);
        match (hits.next(), hits.next()) {
            (Some(m), None) => Some(m),
            _ => None,
        }
    }

    /// Like [`find`](Self::find), with an error naming the key.
    pub fn require(&self, key: &str) -> Result<Model, ModelError> {
        self.find(key).ok_or_else(|| ModelError::UnknownModel(key.to_owned()))
    }

    /// The API key for `provider`: literal key, then `api_key_env`; `Ok(None)` when it needs none.
    pub fn api_key(&self, provider: &str) -> Result<Option<String>, ModelError> {
        match self.providers.iter().find(|p| p.name == provider) {
            Some(p) => self.key_of(p),
            None => Ok(None),
        }
    }

    fn key_of(&self, p: &ProviderRegistration) -> Result<Option<String>, ModelError> {
        if let Some(k) = &p.api_key {
            return Ok(Some(k.clone()));
        }
        match &p.api_key_env {
            Some(env) => (self.env)(env).map(Some).ok_or_else(|| ModelError::MissingApiKey {
                provider: p.name.clone(),
                env: env.clone(),
            }),
            None => Ok(None),
        }
    }

    /// Calls `model`: normalises the transcript for it, resolves the key (unless the options carry
    /// one) and guarantees exactly one terminal event. Never fails out of band.
    pub fn stream(&self, model: &Model, mut context: ProviderContext, mut options: StreamOptions) -> ProviderStream {
        let Some(reg) = self.providers.iter().find(|p| p.name == model.provider) else {
            return error_stream(model, format!("no provider registered for `{}`", model.key()));
        };
        if options.api_key.is_none() {
            match self.key_of(reg) {
                Ok(k) => options.api_key = k,
                Err(e) => return error_stream(model, e.to_string()),
            }
        }
        context.messages = normalize_transcript(std::mem::take(&mut context.messages), model);
        // One provider may serve models of two APIs (OpenAI: Chat Completions and Responses):
        // a model whose API is not its registration's goes to that API's implementation.
        let provider = match self.apis.get(model.api.as_str()) {
            Some(api) if reg.provider.api() != model.api => api,
            _ => &reg.provider,
        };
        let inner = provider.stream(model, context, options);
        guard_terminal(model.clone(), inner)
    }
}

/// A stream with one `error` event.
pub fn error_stream(model: &Model, message: String) -> ProviderStream {
    let mut m = AssistantMessage::empty(model.api.as_str(), &model.provider, &model.id, now_ms());
    m.stop_reason = StopReason::Error;
    m.error_message = Some(message);
    futures::stream::iter([AssistantMessageEvent::Error {
        reason: StopReason::Error,
        error: m,
    }])
    .boxed()
}

/// Ends the stream after its first terminal event, and adds one if the provider forgot.
fn guard_terminal(model: Model, inner: ProviderStream) -> ProviderStream {
    let state = (inner, false, model);
    futures::stream::unfold(state, |(mut inner, done, model)| async move {
        if done {
            return None;
        }
        match inner.next().await {
            Some(ev) => {
                let terminal = ev.is_terminal();
                Some((ev, (inner, terminal, model)))
            }
            None => {
                let mut m = AssistantMessage::empty(model.api.as_str(), &model.provider, &model.id, now_ms());
                m.stop_reason = StopReason::Error;
                m.error_message = Some("provider stream ended without a terminal event".into());
                Some((
                    AssistantMessageEvent::Error {
                        reason: StopReason::Error,
                        error: m,
                    },
                    (inner, true, model),
                ))
            }
        }
    })
    .boxed()
}

/// Unix epoch milliseconds now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    struct Nothing;

    impl Provider for Nothing {
        fn api(&self) -> Api {
            Api::AnthropicMessages
        }

        fn stream(&self, model: &Model, _context: ProviderContext, _options: StreamOptions) -> ProviderStream {
            error_stream(model, "not called".into())
        }
    }

    fn model(id: &str, name: &str, base_url: &str) -> Model {
        Model {
            id: id.into(),
            name: name.into(),
            provider: "anthropic".into(),
            api: Api::AnthropicMessages,
            base_url: base_url.into(),
            reasoning: true,
            input: vec![InputKind::Text],
            cost: ModelCost::default(),
            context_window: 200_000,
            max_tokens: 64_000,
        }
    }

    fn custom(id: &str, input_price: f64) -> CustomModelConfig {
        CustomModelConfig {
            id: id.into(),
            context_window: 100_000,
            max_tokens: 1_000,
            reasoning: false,
            input: vec![InputKind::Text],
            cost: ModelCost {
                input: input_price,
                ..ModelCost::default()
            },
        }
    }

    #[test]
    fn a_built_in_providers_section_adds_and_replaces_models_at_its_base_url() {
        let mut r = ModelRegistry::new();
        let provider: Arc<dyn Provider> = Arc::new(Nothing);
        r.register_api(provider.clone());
        r.register_provider(ProviderRegistration {
            name: "anthropic".into(),
            provider,
            models: vec![
                model("claude-a", "Claude A", "https://api.example"),
                model("claude-b", "Claude B", "https://api.example"),
            ],
            api_key: Some("k".into()),
            api_key_env: None,
        });
        r.add_custom_provider(&CustomProviderConfig {
            name: "anthropic".into(),
            api: Api::AnthropicMessages,
            base_url: String::new(),
            api_key: None,
            api_key_env: Some("X".into()),
            models: vec![custom("claude-b", 7.0), custom("claude-new", 1.0)],
        })
        .unwrap();
        let b = r.find("anthropic/claude-b").unwrap();
        assert_eq!(
            (b.name.as_str(), b.cost.input, b.base_url.as_str()),
            ("Claude B", 7.0, "https://api.example")
        );
        let added = r.find("anthropic/claude-new").unwrap();
        assert_eq!(added.base_url, "https://api.example");
        assert_eq!(r.find("anthropic/claude-a").unwrap().name, "Claude A");
    }
}
