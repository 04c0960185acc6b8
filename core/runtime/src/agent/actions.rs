//! Extension actions carried out by the session (`SessionActions`).

use super::inner::Inner;
use super::prompt::{Placed, QueueMode, place};
use super::session::{apply_model, apply_thinking, user_message};
use crate::extensions::SessionActions;
use crate::tools::ToolSource;
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use volcanic_abstractions::extensions::events::SessionInfoChangedEvent;
use volcanic_abstractions::extensions::{
    CommandDefinition, CommandInfo, Delivery, ExecOptions, ExecResult, ExtensionError, ToolInfo,
};
use volcanic_abstractions::messages::{CustomMessage, ImageContent, Message};
use volcanic_abstractions::model::ThinkingLevel;
use volcanic_abstractions::processes::{ProcessPurpose, ProcessSpawnRequest};
use volcanic_abstractions::provider::ProviderRegistration;
use volcanic_abstractions::tools::Tool;

impl Inner {
    fn me(&self) -> Result<Arc<Inner>, ExtensionError> {
        self.me.upgrade().ok_or(ExtensionError::Stale)
    }

    /// Delivers an injected message: queued during a run, or starting a run when idle and asked to.
    fn deliver(&self, message: Message, delivery: Delivery, trigger: bool) -> Result<(), ExtensionError> {
        let me = self.me()?;
        let queue = {
            let mut st = self.lock_state();
            match delivery {
                Delivery::NextTurn => {
                    st.next_turn.push(message);
                    return Ok(());
                }
                Delivery::Steer | Delivery::FollowUp if !trigger && !st.running() => {
                    st.next_turn.push(message);
                    return Ok(());
                }
                Delivery::Steer => QueueMode::Steer,
                Delivery::FollowUp => QueueMode::FollowUp,
            }
        };
        // The caller is usually a handler on the loop: a run it starts is not awaited.
        match place(&me, message, Some(queue)).map_err(|e| ExtensionError::Failed(e.to_string()))? {
            Placed::Queued => {}
            Placed::Start(busy, initial) => {
                super::run_loop::spawn_detached(me, busy, initial, "run started by an extension")
            }
        }
        Ok(())
    }
}

#[async_trait]
impl SessionActions for Inner {
    fn send_message(
        &self,
        message: CustomMessage,
        delivery: Delivery,
        trigger_turn: bool,
    ) -> Result<(), ExtensionError> {
        self.deliver(Message::Custom(message), delivery, trigger_turn)
    }

    fn send_user_message(
        &self,
        text: String,
        images: Vec<ImageContent>,
        delivery: Delivery,
    ) -> Result<(), ExtensionError> {
        self.deliver(user_message(text, images), delivery, true)
    }

    fn append_entry(&self, custom_type: &str, data: Value) -> Result<(), ExtensionError> {
        self.lock_manager()
            .append_custom(custom_type, Some(data))
            .map(|_| ())
            .map_err(|e| ExtensionError::Failed(e.to_string()))
    }

    async fn set_model(&self, provider: &str, id: &str) -> Result<bool, ExtensionError> {
        let me = self.me()?;
        let model = {
            let reg = self.models.read().unwrap_or_else(|e| e.into_inner());
            match reg.find(&format!("{provider}/{id}")) {
                Some(m) if reg.api_key(provider).is_ok() => m,
                _ => return Ok(false),
            }
        };
        apply_model(&me, model)
            .await
            .map_err(|e| ExtensionError::Failed(e.to_string()))?;
        Ok(true)
    }

    fn thinking_level(&self) -> ThinkingLevel {
        self.lock_state().thinking
    }

    fn set_thinking_level(&self, level: ThinkingLevel) -> Result<(), ExtensionError> {
        let me = self.me()?;
        // Persisting is synchronous; the select event is dispatched in the background.
        tokio::spawn(async move {
            if let Err(e) = apply_thinking(&me, level).await {
                tracing::warn!("set_thinking_level: {e}");
            }
        });
        Ok(())
    }

    fn active_tools(&self) -> Vec<String> {
        self.tools.read().unwrap_or_else(|e| e.into_inner()).active_names()
    }

    fn set_active_tools(&self, names: Vec<String>) {
        self.tools.write().unwrap_or_else(|e| e.into_inner()).set_active(&names);
    }

    fn all_tools(&self) -> Vec<ToolInfo> {
        self.tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .all()
            .iter()
            .map(|t| ToolInfo {
                name: t.name().to_owned(),
                description: t.description().to_owned(),
                parameters: (*t.parameters()).clone(),
            })
            .collect()
    }

    fn commands(&self) -> Vec<CommandInfo> {
        self.commands.read().unwrap_or_else(|e| e.into_inner()).list()
    }

    fn session_name(&self) -> Option<String> {
        self.lock_manager().session_name().map(str::to_owned)
    }

    fn set_session_name(&self, name: &str) -> Result<(), ExtensionError> {
        let me = self.me()?;
        self.lock_manager()
            .append_session_info(Some(name.to_owned()))
            .map_err(|e| ExtensionError::Failed(e.to_string()))?;
        let mut ev = SessionInfoChangedEvent {
            name: Some(name.to_owned()),
        };
        // Handlers are async; the caller may be one of them, so notify in the background.
        tokio::spawn(async move {
            me.runner
                .emit(&mut ev, &me.ctx(), &tokio_util::sync::CancellationToken::new())
                .await;
        });
        Ok(())
    }

    async fn exec(
        &self,
        origin: &str,
        command: &str,
        args: &[String],
        options: ExecOptions,
    ) -> Result<ExecResult, ExtensionError> {
        let me = self.me()?;
        let mut request = ProcessSpawnRequest::new(
            ProcessPurpose::ExtensionExec,
            command,
            options.cwd.clone().unwrap_or_else(|| self.cwd.clone()),
        );
        request.args = args.to_vec();
        request.env = options.env.clone();
        request.origin = origin.to_owned();
        let spawn = volcanic_abstractions::extensions::ExtensionContext::prepare_process(&*me.ctx(), request)
            .await
            .map_err(|e| ExtensionError::Failed(e.to_string()))?;
        let mut cmd = tokio::process::Command::from(spawn.to_std_command());
        cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
        let child = cmd.output();
        let timeout = options.timeout_ms.map(Duration::from_millis).unwrap_or(Duration::MAX);
        let cancel = self.lock_state().abort.clone();
        tokio::select! {
            r = tokio::time::timeout(timeout, child) => match r {
                Ok(Ok(out)) => Ok(ExecResult {
                    stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                    stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                    code: out.status.code(),
                    killed: false,
                }),
                Ok(Err(e)) => Err(ExtensionError::Failed(format!("cannot run {command}: {e}"))),
                Err(_) => Ok(ExecResult { killed: true, ..Default::default() }),
            },
            () = cancel.cancelled() => Ok(ExecResult { killed: true, ..Default::default() }),
        }
    }

    fn register_tool(&self, extension: &str, tool: Arc<dyn Tool>) {
        let name = tool.name().to_owned();
        if let Err(e) = self
            .tools
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .register(tool, ToolSource::Extension(extension.to_owned()))
        {
            tracing::warn!(extension, tool = %name, "{e}");
        }
    }

    fn register_command(&self, extension: &str, name: &str, definition: CommandDefinition) {
        if let Err(e) = self.commands.write().unwrap_or_else(|e| e.into_inner()).register(
            name,
            definition,
            Some(extension.to_owned()),
        ) {
            tracing::warn!(extension, "{e}");
        }
    }

    fn register_provider(&self, registration: ProviderRegistration) {
        self.models
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .register_provider(registration);
    }

    fn unregister_provider(&self, name: &str) {
        self.models
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .unregister_provider(name);
    }
}
