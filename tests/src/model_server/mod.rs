//! A scripted model server speaking the real Anthropic Messages and OpenAI Chat Completions
//! wire formats on `127.0.0.1`.
//!
//! [`ModelServer::start`] binds a free port and serves:
//! - `POST /v1/messages` (Anthropic; point a client's base URL at
//!   [`anthropic_base_url`](ModelServer::anthropic_base_url)),
//! - `POST /v1/chat/completions` (OpenAI; base URL [`openai_base_url`](ModelServer::openai_base_url)),
//! - `POST /v1/responses` (OpenAI Responses; the same base URL).
//!
//! Tests queue [`Turn`]s with [`push`](ModelServer::push); each admitted request, in either
//! format, takes the next turn in FIFO order and gets it rendered in its own format: streamed
//! as SSE when the body has `"stream": true`, else as the non-streaming JSON body.
//!
//! Every request is recorded ([`requests`](ModelServer::requests),
//! [`wait_for_requests`](ModelServer::wait_for_requests)) and checked first, in this order, as
//! the real APIs do; a failed check answers in the format's own error shape and **does not use
//! a turn**:
//! 1. auth: Anthropic `x-api-key` (401 `authentication_error`), OpenAI
//!    `authorization: Bearer <key>` (401; Responses alike); switch off with
//!    [`set_require_api_key`](ModelServer::set_require_api_key). Anthropic also needs
//!    `anthropic-version` (400);
//! 2. the body: JSON with the required fields, tool call / tool result pairing (Anthropic: every
//!    `tool_use` answered by a `tool_result` at the start of the next user turn and every result
//!    answering the turn before, ids matching `^[a-zA-Z0-9_-]+$`, consecutive same-role
//!    messages merged as the API merges them; OpenAI: every `tool_calls[].id` answered by
//!    `role: "tool"` messages right after it, arguments sent as strings), tool names, thinking
//!    budget, and (Anthropic) thinking signatures this server issued, see
//!    [`set_verify_signatures`](ModelServer::set_verify_signatures); Responses: input item shapes,
//!    every `function_call` answered by a `function_call_output` with its `call_id` (and no output
//!    without its call), flat function tools, and `reasoning` items replayed only with an
//!    `encrypted_content` this server issued to the same model (the real API cannot decrypt
//!    another's; `store: false` keeps nothing to look an id up by);
//! 3. the context window, when set ([`set_context_window`](ModelServer::set_context_window));
//! 4. a turn must be queued, else 500 with "volcanic-testkit: no scripted turn left".
//!
//! Many conversations at once (several chats of a bot, a benchmark) cannot be scripted in
//! order: [`set_responder`](ModelServer::set_responder) chooses each turn from the request
//! itself, read with [`Transcript`] (the last user text, whether the request ends in tool
//! results, the prompts of the current run and the tools it already called). Requests the
//! responder passes on take the queue, so FIFO scripts keep working beside it.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use std::time::Duration;
//! use serde_json::json;
//! use volcanic_testkit::model_server::{ModelServer, Turn};
//!
//! let server = ModelServer::start().await?;
//! server.push(Turn::call("call_1", "bash", json!({"command": "echo hi"})));
//! server.push(Turn::reply("It printed hi."));
//! // ... run the client against server.anthropic_base_url() ...
//! let requests = server
//!     .wait_for_requests(2, Duration::from_secs(5))
//!     .await
//!     .map_err(std::io::Error::other)?;
//! assert_eq!(requests[1].tool_outputs()[0].0, "call_1");
//! # Ok(())
//! # }
//! ```
//!
//! Dropping the last clone of the handle stops accepting connections.
#![warn(missing_docs)]

mod anthropic;
mod checks;
mod openai;
mod recorded;
mod respond;
mod responses;
mod script;
mod server;
mod transcript;

#[cfg(test)]
mod anthropic_tests;
#[cfg(test)]
mod checks_tests;
#[cfg(test)]
mod openai_tests;
#[cfg(test)]
mod responses_tests;
#[cfg(test)]
mod server_tests;
#[cfg(test)]
mod test_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use checks::estimated_tokens;
pub use recorded::{RecordedRequest, Rejection};
pub use script::{Block, StopReason, Turn, Usage};
pub use transcript::{Call, Said, Transcript};

use server::Shared;

/// The wire API a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireApi {
    /// Anthropic Messages, `POST /v1/messages`.
    Anthropic,
    /// OpenAI Chat Completions, `POST /v1/chat/completions`.
    OpenAi,
    /// OpenAI Responses, `POST /v1/responses`.
    Responses,
}

/// Returned by [`ModelServer::wait_for_requests`] when fewer requests than wanted arrived in
/// time; carries those that did.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "volcanic-testkit: waited {waited:?} for {wanted} model requests, got {}",
    received.len()
)]
pub struct WaitTimeout {
    /// Number of requests waited for.
    pub wanted: usize,
    /// How long it waited.
    pub waited: Duration,
    /// The requests recorded when the wait gave up.
    pub received: Vec<RecordedRequest>,
}

/// Aborts the serving task when the last handle goes.
#[derive(Debug)]
struct ServeTask(JoinHandle<()>);

impl Drop for ServeTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A function answering requests ahead of the queue ([`ModelServer::set_responder`]).
#[derive(Clone)]
pub(crate) struct Responder(pub(crate) Arc<RespondFn>);

/// The function behind a [`Responder`].
type RespondFn = dyn Fn(WireApi, &serde_json::Value) -> Option<Turn> + Send + Sync;

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Responder")
    }
}

/// Handle to a running scripted model server; cheap to clone, all clones share one server.
#[derive(Debug, Clone)]
pub struct ModelServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    _task: Arc<ServeTask>,
}

impl ModelServer {
    /// Binds `127.0.0.1:0` and serves on the current tokio runtime until the last handle drops.
    pub async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::new());
        let app = server::router(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::warn!(%error, "volcanic-testkit model server stopped");
            }
        });
        Ok(Self {
            shared,
            addr,
            _task: Arc::new(ServeTask(task)),
        })
    }

    /// The bound address (`127.0.0.1:<port>`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Base URL for Anthropic clients, which append `/v1/messages`: the same as [`url`](Self::url).
    pub fn anthropic_base_url(&self) -> String {
        self.url()
    }

    /// Base URL for OpenAI clients, which append `/chat/completions`: [`url`](Self::url) + `/v1`.
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// Queues a turn; requests take turns in push order.
    pub fn push(&self, turn: Turn) {
        let mut state = self.shared.lock();
        let index = state.pushed;
        state.pushed += 1;
        state.turns.push_back((index, turn));
    }

    /// Sets a function that answers requests (admitted ones: checks and the window come first)
    /// before the queue: `Some(turn)` serves that turn, `None` takes the next queued one. For
    /// conversations too long or too irregular to script in order (compaction's summary
    /// requests arrive whenever the client decides to compact), or many conversations at once.
    /// The responder runs under the server's lock: keep it quick.
    ///
    /// ```
    /// use serde_json::json;
    /// use volcanic_testkit::model_server::{ModelServer, Transcript, Turn};
    ///
    /// # async fn demo() -> std::io::Result<()> {
    /// let server = ModelServer::start().await?;
    /// server.set_responder(|api, body| {
    ///     let t = Transcript::of(api, body);
    ///     if t.ends_with_tool_result() {
    ///         return Some(Turn::reply("The command ran."));
    ///     }
    ///     let asked = t.last_user_text()?;
    ///     Some(if asked.contains("run") {
    ///         Turn::call("call_1", "bash", json!({"command": "true"}))
    ///     } else {
    ///         Turn::reply(format!("You said: {asked}"))
    ///     })
    /// });
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_responder(
        &self,
        responder: impl Fn(WireApi, &serde_json::Value) -> Option<Turn> + Send + Sync + 'static,
    ) {
        self.shared.lock().responder = Some(Responder(Arc::new(responder)));
    }

    /// Queues several turns in order.
    pub fn push_all(&self, turns: impl IntoIterator<Item = Turn>) {
        for turn in turns {
            self.push(turn);
        }
    }

    /// Number of queued turns no request has taken yet.
    pub fn pending_turns(&self) -> usize {
        self.shared.lock().turns.len()
    }

    /// Every request received so far, in arrival order, rejected ones included.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// The requests from the `from`-th on (0-based), in arrival order: only those are copied,
    /// so a benchmark polling a long-running server does not copy everything each time.
    pub fn requests_since(&self, from: usize) -> Vec<RecordedRequest> {
        self.shared.lock().requests.get(from..).unwrap_or_default().to_vec()
    }

    /// Waits until at least `n` requests were recorded (rejected ones count) without copying
    /// any (the state stays free for the handlers); `Err` with the count reached when `timeout`
    /// runs out first.
    pub async fn wait_for_request_count(&self, n: usize, timeout: Duration) -> Result<usize, usize> {
        let mut recorded = self.shared.recorded.subscribe();
        let wait = async { recorded.wait_for(|count| *count >= n).await.map(|c| *c).ok() };
        match tokio::time::timeout(timeout, wait).await {
            Ok(Some(count)) => Ok(count),
            _ => Err(*self.shared.recorded.borrow()),
        }
    }

    /// Number of streamed replies whose client went away (closed the connection or dropped the
    /// response) before all their scripted events were sent: a client stopping a paced answer.
    /// Replies cut by the script itself count once their scripted events are out, so not.
    pub fn streams_left(&self) -> usize {
        self.shared.streams_left.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Sets the context window in tokens (`None`: unlimited). A request whose
    /// [`estimated_tokens`] exceeds it gets 400: Anthropic `invalid_request_error` "prompt is
    /// too long: N tokens > M maximum", OpenAI code `context_length_exceeded` "This model's
    /// maximum context length is M tokens. However, your messages resulted in N tokens."
    pub fn set_context_window(&self, tokens: Option<u64>) {
        self.shared.lock().context_window = tokens;
    }

    /// Whether requests need an API key (default `true`); local OpenAI-compatible servers such
    /// as Ollama take none.
    pub fn set_require_api_key(&self, required: bool) {
        self.shared.lock().require_api_key = required;
    }

    /// Whether Anthropic thinking blocks must carry a signature issued by one of this server's
    /// turns (default `true`, as the real API rejects signatures it did not make). A block
    /// without a `signature` field is rejected either way.
    pub fn set_verify_signatures(&self, verify: bool) {
        self.shared.lock().verify_signatures = verify;
    }

    /// Waits until at least `n` requests were recorded (rejected ones count), then returns all
    /// of them; gives up after `timeout` with the ones seen so far.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> Result<Vec<RecordedRequest>, WaitTimeout> {
        let mut recorded = self.shared.recorded.subscribe();
        // The watch guard must be gone before `requests()` locks the state, which handlers
        // hold while they update the watch.
        let wait = async { recorded.wait_for(|count| *count >= n).await.is_ok() };
        let reached = tokio::time::timeout(timeout, wait).await.unwrap_or(false);
        if reached {
            Ok(self.requests())
        } else {
            Err(WaitTimeout {
                wanted: n,
                waited: timeout,
                received: self.requests(),
            })
        }
    }
}
