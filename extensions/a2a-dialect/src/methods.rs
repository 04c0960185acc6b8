//! The JSON-RPC method names of A2A 0.3 (1.0's are `a2a::methods`), named as 1.0 names the same
//! call.

/// `message/send` (1.0 `SendMessage`).
pub const SEND_MESSAGE: &str = "message/send";
/// `message/stream` (1.0 `SendStreamingMessage`).
pub const SEND_STREAMING_MESSAGE: &str = "message/stream";
/// `tasks/get` (1.0 `GetTask`).
pub const GET_TASK: &str = "tasks/get";
/// `tasks/list` (1.0 `ListTasks`).
pub const LIST_TASKS: &str = "tasks/list";
/// `tasks/cancel` (1.0 `CancelTask`).
pub const CANCEL_TASK: &str = "tasks/cancel";
/// `tasks/resubscribe` (1.0 `SubscribeToTask`).
pub const SUBSCRIBE_TO_TASK: &str = "tasks/resubscribe";
/// `tasks/pushNotificationConfig/set` (1.0 `CreateTaskPushNotificationConfig`).
pub const CREATE_PUSH_CONFIG: &str = "tasks/pushNotificationConfig/set";
/// `tasks/pushNotificationConfig/get` (1.0 `GetTaskPushNotificationConfig`).
pub const GET_PUSH_CONFIG: &str = "tasks/pushNotificationConfig/get";
/// `tasks/pushNotificationConfig/list` (1.0 `ListTaskPushNotificationConfigs`).
pub const LIST_PUSH_CONFIGS: &str = "tasks/pushNotificationConfig/list";
/// `tasks/pushNotificationConfig/delete` (1.0 `DeleteTaskPushNotificationConfig`).
pub const DELETE_PUSH_CONFIG: &str = "tasks/pushNotificationConfig/delete";
/// `agent/getAuthenticatedExtendedCard` (1.0 `GetExtendedAgentCard`).
pub const GET_EXTENDED_AGENT_CARD: &str = "agent/getAuthenticatedExtendedCard";
