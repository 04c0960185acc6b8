"""Drives the real volcanic-bot's A2A server with the pinned Python a2a-sdk client (1.3.0).

usage: a2a_bot_client.py BASE_URL TOKEN OTHER_TOKEN {1.0|0.3}

The bot's model is scripted by the test (bot/tests/e2e/a2a_server.rs): "echo: <text>" for a
plain message, a `read` call first for "use a tool", a reply held for a minute for "slow", and
`bash rm -rf` (which the bot's guard asks about) for "clean up". In the dialect asked: blocking
send, streaming send (a `working` update naming the tool, then the artifact), get
(historyLength), list (1.0), a busy context refusing a second task (UnsupportedOperation), resubscribe, cancel,
input-required answered by the next message, push to a local receiver (with its token and
Authorization), the other caller's TaskNotFound, and a wrong token's 401. Prints `ok <step>`
per step; exits 1 with the reason on the first failure.
"""

import asyncio
import sys

from a2a.types import (
    AuthenticationInfo,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a_client_common import check_isolation, check_push, client_for, collect, fail, msg, ok, push_receiver


async def main():
    base, token, other, dialect = sys.argv[1:5]
    tag = dialect.replace(".", "")
    blocking = await client_for(base, token, dialect, streaming=False)
    streaming = await client_for(base, token, dialect, streaming=True)

    events = await collect(blocking.send_message(SendMessageRequest(message=msg(f"hello {tag}", f"m-hello-{tag}"))))
    task = events[-1].task
    if task.status.state != TaskState.TASK_STATE_COMPLETED or f"echo: hello {tag}" not in str(task.artifacts):
        fail(f"blocking send: {events}")
    ok("blocking send")

    events = await collect(streaming.send_message(SendMessageRequest(message=msg(f"use a tool {tag}", f"m-tool-{tag}"))))
    kinds = [e.WhichOneof("payload") for e in events]
    updates = [e.status_update.status for e in events if e.HasField("status_update")]
    said = " ".join(str(u.message) for u in updates)
    if kinds[0] != "task" or "artifact_update" not in kinds or updates[-1].state != TaskState.TASK_STATE_COMPLETED:
        fail(f"streaming send: {kinds} {updates}")
    if "tool `read`" not in said or not any(u.state == TaskState.TASK_STATE_WORKING for u in updates):
        fail(f"streaming send: no working update naming the tool: {updates}")
    ok("streaming send")

    got = await blocking.get_task(GetTaskRequest(id=task.id, history_length=1))
    if got.id != task.id or len(got.history) != 1:
        fail(f"get: {got}")
    ok("get")

    if dialect == "1.0":
        listed = await blocking.list_tasks(ListTasksRequest(page_size=100))
        if task.id not in [t.id for t in listed.tasks]:
            fail(f"list: {listed}")
        ok("list")

    req = SendMessageRequest(message=msg("slow", f"m-slow-{tag}"), configuration=SendMessageConfiguration(return_immediately=True))
    slow = (await collect(blocking.send_message(req)))[-1].task
    busy = SendMessageRequest(message=msg("hello again", f"m-busy-{tag}", context_id=slow.context_id))
    try:
        refused = await collect(blocking.send_message(busy))
    except Exception as e:  # noqa: BLE001
        if "busy with task" not in str(e) or slow.id not in str(e):
            fail(f"a second task in a busy context refused for another reason: {e}")
    else:
        fail(f"a second task in a busy context was accepted: {refused}")
    ok("busy context")
    sub = streaming.subscribe(SubscribeToTaskRequest(id=slow.id))
    first = await sub.__anext__()
    if first.WhichOneof("payload") != "task" or first.task.id != slow.id:
        fail(f"resubscribe: first event {first}")
    ok("resubscribe")
    canceled = await blocking.cancel_task(CancelTaskRequest(id=slow.id))
    if canceled.status.state != TaskState.TASK_STATE_CANCELED:
        fail(f"cancel: {canceled}")
    rest = await asyncio.wait_for(collect(sub), 20)
    if not rest or rest[-1].status_update.status.state != TaskState.TASK_STATE_CANCELED:
        fail(f"the subscription did not end with canceled: {rest}")
    ok("cancel")

    httpd, hook = push_receiver()
    push = TaskPushNotificationConfig(url=hook, token="tok-1", authentication=AuthenticationInfo(scheme="Bearer", credentials="push-secret"))
    req = SendMessageRequest(message=msg("clean up", f"m-clean-{tag}"), configuration=SendMessageConfiguration(task_push_notification_config=push))
    asked = (await collect(blocking.send_message(req)))[-1].task
    question = str(asked.status.message)
    if asked.status.state != TaskState.TASK_STATE_INPUT_REQUIRED or "Allow" not in question:
        fail(f"input-required: {asked}")
    answer = SendMessageRequest(message=msg("Allow", f"m-allow-{tag}", asked.id))
    done = (await collect(blocking.send_message(answer)))[-1].task
    if done.status.state != TaskState.TASK_STATE_COMPLETED or "Cleaned up" not in str(done.artifacts):
        fail(f"answer to input-required: {done}")
    ok("input-required")
    await check_push()

    await check_isolation(base, other, dialect, done.id)
    httpd.shutdown()


asyncio.run(main())
