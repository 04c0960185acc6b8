//! Scripted turns: what the server answers to one request.
//!
//! A [`Turn`] is built with chained methods and handed to
//! [`ModelServer::push`](super::ModelServer::push). Each request, in either wire format, takes the
//! next queued turn; the same turn renders as Anthropic events or OpenAI chunks depending on the
//! route it was asked on.

use std::time::Duration;

use serde_json::Value;

/// Why the scripted assistant message ended.
///
/// On the wire: Anthropic `stop_reason` (`end_turn`, `tool_use`, `max_tokens`), OpenAI
/// `finish_reason` (`stop`, `tool_calls`, `length`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The model finished its answer: `end_turn` / `stop`.
    EndTurn,
    /// The model wants its tool calls executed: `tool_use` / `tool_calls`.
    ToolUse,
    /// The output token limit cut the answer: `max_tokens` / `length`.
    MaxTokens,
}

impl StopReason {
    /// The Anthropic `stop_reason` string.
    pub(crate) fn anthropic(self) -> &'static str {
        match self {
            Self::EndTurn => "end_turn",
            Self::ToolUse => "tool_use",
            Self::MaxTokens => "max_tokens",
        }
    }

    /// The OpenAI `finish_reason` string.
    pub(crate) fn openai(self) -> &'static str {
        match self {
            Self::EndTurn => "stop",
            Self::ToolUse => "tool_calls",
            Self::MaxTokens => "length",
        }
    }
}

/// Token counts reported for a turn, all in tokens.
///
/// Counted the Anthropic way: `input` excludes the cached parts. Anthropic reports them as
/// `input_tokens`, `output_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens`;
/// OpenAI as `prompt_tokens = input + cache_read + cache_write`, `completion_tokens = output`,
/// `prompt_tokens_details.cached_tokens = cache_read` (OpenAI has no cache-write count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Uncached input tokens.
    pub input: u64,
    /// Output tokens (thinking included).
    pub output: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
}

/// One content block of a scripted assistant message, in the order it is streamed.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Reasoning text. Anthropic: a `thinking` block whose `signature_delta` carries `signature`
    /// (none sent when `None`); OpenAI: `delta.reasoning_content` (the signature is not sent);
    /// Responses: a `reasoning` item whose summary is the text and whose `encrypted_content` is
    /// the signature (or one the server makes up).
    Thinking {
        /// The reasoning text.
        text: String,
        /// The opaque signature, if any.
        signature: Option<String>,
    },
    /// Visible answer text.
    Text(String),
    /// A tool call. `arguments` is the JSON object the model passes (streamed as a string split
    /// into several chunks).
    ToolCall {
        /// Call id: Anthropic `tool_use.id`, OpenAI `tool_calls[].id`.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments as a JSON value (normally an object).
        arguments: Value,
    },
}

/// How a streamed reply is cut short; see the `*_after` methods of [`Turn`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cut {
    /// Send `n` events, then abort the connection mid-body.
    Abort(usize),
    /// Send `n` events, then end the body cleanly (no terminal event).
    End(usize),
    /// Send `n` events, then send nothing more and keep the connection open.
    Stall(usize),
    /// Send `n` events, then an in-stream error event with this message, then end the body.
    Fail(usize, String),
}

impl Cut {
    /// Number of normal events sent before the cut.
    pub(crate) fn after(&self) -> usize {
        match self {
            Self::Abort(n) | Self::End(n) | Self::Stall(n) | Self::Fail(n, _) => *n,
        }
    }
}

/// What kind of answer a turn gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A normal assistant message built from the blocks.
    Reply,
    /// An HTTP error with the format's own error body.
    Error {
        /// HTTP status.
        status: u16,
        /// The error message.
        message: String,
    },
    /// HTTP 429 with a `retry-after` header.
    RateLimited {
        /// The `retry-after` value, in seconds.
        retry_after_secs: u64,
    },
}

/// One scripted answer of the model server.
///
/// ```
/// use serde_json::json;
/// use volcanic_testkit::model_server::{StopReason, Turn};
///
/// let turn = Turn::new()
///     .thinking("let me check", Some("sig-1"))
///     .text("Running it.")
///     .tool_call("call_1", "bash", json!({"command": "echo hi"}))
///     .usage(120, 40, 0, 0);
/// assert_eq!(turn.effective_stop_reason(), StopReason::ToolUse);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub(crate) outcome: Outcome,
    pub(crate) blocks: Vec<Block>,
    pub(crate) stop_reason: Option<StopReason>,
    pub(crate) usage: Option<Usage>,
    pub(crate) delay: Duration,
    /// Pause before each streamed event after the first ([`Turn::pace`]).
    pub(crate) gap: Duration,
    pub(crate) cut: Option<Cut>,
    /// [`Turn::failed`]: the reply ends in a failure instead of its terminal event.
    pub(crate) failure: Option<String>,
}

impl Default for Turn {
    fn default() -> Self {
        Self::new()
    }
}

impl Turn {
    /// An empty reply; add blocks with [`text`](Self::text), [`thinking`](Self::thinking) and
    /// [`tool_call`](Self::tool_call).
    pub fn new() -> Self {
        Self {
            outcome: Outcome::Reply,
            blocks: Vec::new(),
            stop_reason: None,
            usage: None,
            delay: Duration::ZERO,
            gap: Duration::ZERO,
            cut: None,
            failure: None,
        }
    }

    /// A reply made of one text block: `Turn::new().text(text)`.
    pub fn reply(text: impl Into<String>) -> Self {
        Self::new().text(text)
    }

    /// A reply made of one tool call: `Turn::new().tool_call(id, name, arguments)`.
    pub fn call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self::new().tool_call(id, name, arguments)
    }

    /// An HTTP error `status` whose body is the format's own error shape carrying `message`.
    ///
    /// The error type follows the status: Anthropic `invalid_request_error` (400),
    /// `authentication_error` (401), `permission_error` (403), `not_found_error` (404),
    /// `request_too_large` (413), `rate_limit_error` (429), `api_error` (500 and others),
    /// `overloaded_error` (529); OpenAI `invalid_request_error` (4xx), `requests` (429),
    /// `server_error` (5xx).
    pub fn error(status: u16, message: impl Into<String>) -> Self {
        Self {
            outcome: Outcome::Error {
                status,
                message: message.into(),
            },
            ..Self::new()
        }
    }

    /// HTTP 429 with header `retry-after: <retry_after_secs>` (seconds) and a rate-limit error body.
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self {
            outcome: Outcome::RateLimited { retry_after_secs },
            ..Self::new()
        }
    }

    /// Streams the blocks, then fails in place of the terminal event: Responses sends
    /// `response.failed` with `error: {"code": "server_error", message}`; the other formats send
    /// their in-stream error (as [`fail_after`](Self::fail_after) does) instead of
    /// `message_stop` / `[DONE]`.
    pub fn failed(mut self, message: impl Into<String>) -> Self {
        self.failure = Some(message.into());
        self
    }

    /// Appends a text block.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.blocks.push(Block::Text(text.into()));
        self
    }

    /// Appends a thinking block; `signature` is the opaque value Anthropic clients must send back.
    pub fn thinking(mut self, text: impl Into<String>, signature: Option<&str>) -> Self {
        self.blocks.push(Block::Thinking {
            text: text.into(),
            signature: signature.map(str::to_owned),
        });
        self
    }

    /// Appends a tool call with the given id, tool name and JSON arguments.
    pub fn tool_call(mut self, id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        self.blocks.push(Block::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        });
        self
    }

    /// Sets the stop reason. Without it: [`StopReason::ToolUse`] when the turn has tool calls,
    /// else [`StopReason::EndTurn`].
    pub fn stop_reason(mut self, reason: StopReason) -> Self {
        self.stop_reason = Some(reason);
        self
    }

    /// Shorthand for `.stop_reason(StopReason::MaxTokens)`: `max_tokens` / `length` /
    /// Responses `response.incomplete` with reason `max_output_tokens`.
    pub fn length(self) -> Self {
        self.stop_reason(StopReason::MaxTokens)
    }

    /// Sets the reported token counts (see [`Usage`]). Without it the server reports
    /// `input` = the request's estimated size (JSON chars / 4), `output` = the turn's text chars / 4
    /// (at least 1), and no cache use.
    pub fn usage(mut self, input: u64, output: u64, cache_read: u64, cache_write: u64) -> Self {
        self.usage = Some(Usage {
            input,
            output,
            cache_read,
            cache_write,
        });
        self
    }

    /// Waits this long before sending the response headers (any outcome).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Streams slowly: waits `gap` before each event after the first, as a model writing its
    /// answer does (for clients that show the text while it comes). A text block is streamed in
    /// a few pieces; use several [`text`](Self::text) blocks for more steps.
    pub fn pace(mut self, gap: Duration) -> Self {
        self.gap = gap;
        self
    }

    /// Streams the first `n_events` events of this reply, then aborts the connection mid-body
    /// (the client sees a transport error, and no `message_stop` / `[DONE]`).
    ///
    /// Events are counted as sent: Anthropic `event:` blocks (including `ping`), OpenAI `data:`
    /// lines. A non-streaming request to a cut turn gets its connection aborted with no body.
    pub fn drop_after(mut self, n_events: usize) -> Self {
        self.cut = Some(Cut::Abort(n_events));
        self
    }

    /// Streams the first `n_events` events, then ends the body cleanly without the terminal
    /// event: the "stream closed before done" case a client must notice on its own.
    pub fn end_after(mut self, n_events: usize) -> Self {
        self.cut = Some(Cut::End(n_events));
        self
    }

    /// Streams the first `n_events` events, then sends nothing more while keeping the
    /// connection open (for idle-timeout and cancellation tests).
    pub fn stall_after(mut self, n_events: usize) -> Self {
        self.cut = Some(Cut::Stall(n_events));
        self
    }

    /// Streams the first `n_events` events, then an in-stream error and ends the body.
    /// Anthropic: `event: error` with an `overloaded_error`; OpenAI: `data: {"error":{...}}`
    /// with type `server_error`; Responses: an `error` event with code `server_error`.
    pub fn fail_after(mut self, n_events: usize, message: impl Into<String>) -> Self {
        self.cut = Some(Cut::Fail(n_events, message.into()));
        self
    }

    /// The stop reason this turn reports: the one set, or the default described at
    /// [`stop_reason`](Self::stop_reason).
    pub fn effective_stop_reason(&self) -> StopReason {
        if let Some(reason) = self.stop_reason {
            return reason;
        }
        let has_calls = self.blocks.iter().any(|block| matches!(block, Block::ToolCall { .. }));
        if has_calls {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        }
    }

    /// The scripted blocks, in stream order.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// Usage to report, given the estimated size of the request in tokens.
    pub(crate) fn effective_usage(&self, request_tokens: u64) -> Usage {
        if let Some(usage) = self.usage {
            return usage;
        }
        let chars: usize = self
            .blocks
            .iter()
            .map(|block| match block {
                Block::Thinking { text, .. } | Block::Text(text) => text.chars().count(),
                Block::ToolCall { name, arguments, .. } => name.chars().count() + arguments.to_string().chars().count(),
            })
            .sum();
        Usage {
            input: request_tokens,
            output: (chars as u64 / 4).max(1),
            cache_read: 0,
            cache_write: 0,
        }
    }

    /// Signatures of the thinking blocks, which Anthropic requests may send back.
    pub(crate) fn signatures(&self) -> impl Iterator<Item = &str> {
        self.blocks.iter().filter_map(|block| match block {
            Block::Thinking {
                signature: Some(signature),
                ..
            } => Some(signature.as_str()),
            Block::Thinking { signature: None, .. } | Block::Text(_) | Block::ToolCall { .. } => None,
        })
    }
}

/// Splits `text` into at most `parts` pieces of similar length on char boundaries.
/// An empty string gives no pieces.
pub(crate) fn split_chunks(text: &str, parts: usize) -> Vec<&str> {
    let chars = text.chars().count();
    if chars == 0 {
        return Vec::new();
    }
    let parts = parts.clamp(1, chars);
    let per = chars.div_ceil(parts);
    let mut pieces = Vec::with_capacity(parts);
    let mut start = 0;
    let mut count = 0;
    for (offset, _) in text.char_indices() {
        if count == per {
            pieces.push(&text[start..offset]);
            start = offset;
            count = 0;
        }
        count += 1;
    }
    pieces.push(&text[start..]);
    pieces
}
