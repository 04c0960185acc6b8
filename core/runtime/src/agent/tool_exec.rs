//! Tool calls of one assistant message: preparation in source order, execution in parallel
//! unless a tool or the session asks for sequential, `tool_execution_end` in completion order,
//! results in source order. Every result, progress update and error is redacted before
//! `tool_result` handlers and again after them.

use super::inner::Inner;
use crate::models::now_ms;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::extensions::events::{
    ToolCallEvent, ToolExecutionEndEvent, ToolExecutionStartEvent, ToolExecutionUpdateEvent, ToolResultEvent,
};
use volcanic_abstractions::messages::{
    AssistantMessage, StopReason, TextContent, ToolCall, ToolResultMessage, UserContent,
};
use volcanic_abstractions::tools::{ExecutionMode, Tool, ToolError, ToolInvocation, ToolResult};

/// Results of one batch.
pub(crate) struct BatchOutcome {
    /// In source order.
    pub results: Vec<ToolResultMessage>,
    /// Every result asked to end the run.
    pub all_terminate: bool,
}

/// Text of the error result for calls of a message cut off by the output limit.
pub const LENGTH_STOP_ERROR: &str = "Your previous message hit the output token limit, so this tool call was not executed (its arguments may be incomplete). Please re-issue it, splitting large content into smaller pieces.";

enum Prepared {
    Run { tool: Arc<dyn Tool>, args: Value },
    Done(ToolResult),
}

pub(crate) async fn execute_batch(
    inner: &Arc<Inner>,
    message: &AssistantMessage,
    cancel: &CancellationToken,
) -> BatchOutcome {
    let calls: Vec<ToolCall> = message.tool_calls().cloned().collect();
    if message.stop_reason == StopReason::Length {
        let results = calls
            .iter()
            .map(|c| result_message(c, error_result(LENGTH_STOP_ERROR)))
            .collect();
        return BatchOutcome {
            results,
            all_terminate: false,
        };
    }
    let ctx = inner.ctx();
    // Preparation: sequential, source order.
    let mut prepared: Vec<(ToolCall, Prepared)> = Vec::with_capacity(calls.len());
    for call in calls {
        let p = prepare(inner, &call, &ctx, cancel).await;
        prepared.push((call, p));
    }
    let sequential = inner.config.sequential_tools
        || prepared.iter().any(
            |(_, p)| matches!(p, Prepared::Run { tool, .. } if tool.execution_mode() == ExecutionMode::Sequential),
        );
    for (call, p) in &prepared {
        let args = match p {
            Prepared::Run { args, .. } => args.clone(),
            Prepared::Done(_) => call.arguments.clone(),
        };
        let host = AgentSessionEvent::ToolExecutionStart {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: args.clone(),
        };
        let mut ev = ToolExecutionStartEvent {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args,
        };
        inner.announce(host, &mut ev, cancel).await;
    }
    let mut finished: Vec<Option<ToolResult>> = vec![None; prepared.len()];
    if sequential {
        for (i, (call, p)) in prepared.iter().enumerate() {
            let r = run_one(inner, call, p, cancel).await;
            finished[i] = Some(r);
        }
    } else {
        let mut running: FuturesUnordered<_> = prepared
            .iter()
            .enumerate()
            .map(|(i, (call, p))| async move { (i, run_one(inner, call, p, cancel).await) })
            .collect();
        while let Some((i, r)) = running.next().await {
            finished[i] = Some(r);
        }
    }
    let mut results = Vec::with_capacity(prepared.len());
    let mut all_terminate = !prepared.is_empty();
    for ((call, _), r) in prepared.iter().zip(finished) {
        let r = r.unwrap_or_else(|| error_result("tool did not finish"));
        all_terminate &= r.terminate;
        results.push(result_message(call, r));
    }
    BatchOutcome { results, all_terminate }
}

async fn prepare(
    inner: &Arc<Inner>,
    call: &ToolCall,
    ctx: &Arc<dyn volcanic_abstractions::extensions::ExtensionContext>,
    cancel: &CancellationToken,
) -> Prepared {
    let tool = {
        let reg = inner.tools.read().unwrap_or_else(|e| e.into_inner());
        let active = reg.active_names().iter().any(|n| n == &call.name);
        match reg.get(&call.name) {
            Some(t) if active => Ok(t),
            _ => Err(format!(
                "Tool `{}` not found. Available tools: {}",
                call.name,
                reg.active_names().join(", ")
            )),
        }
    };
    let tool = match tool {
        Ok(t) => t,
        Err(e) => return Prepared::Done(error_result(&e)),
    };
    let validate = |args: &Value| {
        inner
            .tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .validate(&call.name, args)
    };
    if let Err(e) = validate(&call.arguments) {
        return Prepared::Done(error_result(&e));
    }
    let mut ev = ToolCallEvent {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        input: call.arguments.clone(),
        blocked: None,
    };
    inner.runner.emit(&mut ev, ctx, cancel).await;
    if let Some(reason) = ev.blocked {
        return Prepared::Done(error_result(&reason));
    }
    // Handlers may have patched the input: validate again.
    if let Err(e) = validate(&ev.input) {
        return Prepared::Done(error_result(&e));
    }
    if let Some(refusal) = super::skills::protected_refusal(inner, &call.name, &ev.input) {
        return Prepared::Done(error_result(&refusal));
    }
    Prepared::Run { tool, args: ev.input }
}

async fn run_one(inner: &Arc<Inner>, call: &ToolCall, prepared: &Prepared, cancel: &CancellationToken) -> ToolResult {
    let ctx = inner.ctx();
    let (raw, args) = match prepared {
        Prepared::Done(r) => (r.clone(), call.arguments.clone()),
        Prepared::Run { tool, args } => {
            let weak = inner.me.clone();
            let (id, name, a) = (call.id.clone(), call.name.clone(), args.clone());
            let progress = Arc::new(move |partial: ToolResult| {
                let Some(inner) = weak.upgrade() else { return };
                let partial = redact_result(&inner, partial);
                inner.emit(AgentSessionEvent::ToolExecutionUpdate {
                    tool_call_id: id.clone(),
                    tool_name: name.clone(),
                    args: a.clone(),
                    partial_result: (&partial).into(),
                });
                if inner.runner.has_handlers::<ToolExecutionUpdateEvent>() {
                    let mut ev = ToolExecutionUpdateEvent {
                        tool_call_id: id.clone(),
                        tool_name: name.clone(),
                        partial_result: partial,
                    };
                    let inner2 = inner.clone();
                    tokio::spawn(async move {
                        inner2
                            .runner
                            .emit(&mut ev, &inner2.ctx(), &CancellationToken::new())
                            .await;
                    });
                }
            });
            let invocation = ToolInvocation {
                tool_call_id: call.id.clone(),
                ctx: ctx.clone(),
                progress: Some(progress),
            };
            // A panicking tool must not take the run with it (the session would stay busy):
            // its panic becomes an error result the model can read.
            let guarded = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(tool.execute(
                args.clone(),
                invocation,
                cancel.child_token(),
            )));
            let outcome = tokio::select! {
                r = guarded => r.unwrap_or_else(|panic| {
                    let why = panic
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "unknown panic".into());
                    tracing::error!(tool = %call.name, "tool panicked: {why}");
                    Err(ToolError::msg(format!("the tool {} failed internally: {why}", call.name)))
                }),
                () = cancel.cancelled() => Err(ToolError::Aborted),
            };
            let r = match outcome {
                Ok(mut r) => {
                    r.is_error = false;
                    r
                }
                Err(ToolError::Failed(m)) => error_result(&m),
                Err(ToolError::WithResult(mut r)) => {
                    r.is_error = true;
                    r
                }
                Err(ToolError::Aborted) => error_result("Tool execution was aborted"),
            };
            (r, args.clone())
        }
    };
    let redacted = redact_result(inner, raw);
    let mut ev = ToolResultEvent {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        input: args,
        content: redacted.content,
        details: redacted.details,
        is_error: redacted.is_error,
    };
    inner.runner.emit(&mut ev, &ctx, cancel).await;
    let result = redact_result(
        inner,
        ToolResult {
            content: ev.content,
            details: ev.details,
            is_error: ev.is_error,
            terminate: redacted.terminate,
        },
    );
    let host = AgentSessionEvent::ToolExecutionEnd {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        result: (&result).into(),
        is_error: result.is_error,
    };
    let mut end = ToolExecutionEndEvent {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        result: result.clone(),
        is_error: result.is_error,
    };
    inner.announce(host, &mut end, cancel).await;
    result
}

fn error_result(text: &str) -> ToolResult {
    let mut r = ToolResult::text(text);
    r.is_error = true;
    r
}

fn result_message(call: &ToolCall, r: ToolResult) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: r.content,
        details: r.details,
        is_error: r.is_error,
        timestamp: now_ms(),
    }
}

/// Redacts secrets from text content and from string values in details.
fn redact_result(inner: &Inner, mut r: ToolResult) -> ToolResult {
    for c in &mut r.content {
        if let UserContent::Text(TextContent { text, .. }) = c {
            *text = inner.redact(text);
        }
    }
    if let Some(d) = r.details.as_mut() {
        redact_value(inner, d);
    }
    r
}

fn redact_value(inner: &Inner, v: &mut Value) {
    match v {
        Value::String(s) => *s = inner.redact(s),
        Value::Array(a) => a.iter_mut().for_each(|x| redact_value(inner, x)),
        Value::Object(o) => o.values_mut().for_each(|x| redact_value(inner, x)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}
