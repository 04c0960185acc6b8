"""Drives a Volcanic A2A server with the pinned Python a2a-sdk client (1.3.0).

usage: a2a_server_client.py BASE_URL TOKEN OTHER_TOKEN {1.0|0.3} [STRICT_URL]

Runs, in the dialect asked: blocking send, streaming send, get (historyLength), list, cancel,
resubscribe (subscribe), push to a local receiver (with its Authorization header); then checks
that the caller with OTHER_TOKEN cannot get, cancel or subscribe to this caller's task
(TaskNotFound), and that a wrong token is refused with 401. Prints `ok <step>` per step and
exits 1 with the reason on the first failure. STRICT_URL: a server (same callers) without the
loopback push switch, where a push config to 127.0.0.1 must be refused.
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
    blocking = await client_for(base, token, dialect, streaming=False)
    streaming = await client_for(base, token, dialect, streaming=True)

    events = await collect(blocking.send_message(SendMessageRequest(message=msg("hello", "m-block"))))
    task = events[-1].task
    if task.status.state != TaskState.TASK_STATE_COMPLETED or "echo: hello" not in str(task.artifacts):
        fail(f"blocking send: {events}")
    ok("blocking send")

    events = await collect(streaming.send_message(SendMessageRequest(message=msg("s", "tck-stream-001"))))
    kinds = [e.WhichOneof("payload") for e in events]
    states = [e.status_update.status.state for e in events if e.HasField("status_update")]
    if kinds[0] != "task" or "artifact_update" not in kinds or states[-1] != TaskState.TASK_STATE_COMPLETED:
        fail(f"streaming send: {kinds} {states}")
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

    req = SendMessageRequest(message=msg("slow", "slow-1"), configuration=SendMessageConfiguration(return_immediately=True))
    events = await collect(blocking.send_message(req))
    slow = events[-1].task
    sub = streaming.subscribe(SubscribeToTaskRequest(id=slow.id))
    first = await sub.__anext__()
    if first.WhichOneof("payload") != "task" or first.task.id != slow.id:
        fail(f"resubscribe: first event {first}")
    ok("resubscribe")

    canceled = await blocking.cancel_task(CancelTaskRequest(id=slow.id))
    if canceled.status.state != TaskState.TASK_STATE_CANCELED:
        fail(f"cancel: {canceled}")
    rest = await asyncio.wait_for(collect(sub), 10)
    if not rest or rest[-1].status_update.status.state != TaskState.TASK_STATE_CANCELED:
        fail(f"the subscription did not end with canceled: {rest}")
    ok("cancel")

    httpd, hook = push_receiver()
    push = TaskPushNotificationConfig(url=hook, token="tok-1", authentication=AuthenticationInfo(scheme="Bearer", credentials="push-secret"))
    req = SendMessageRequest(message=msg("q", "tck-input-required-1"), configuration=SendMessageConfiguration(task_push_notification_config=push))
    asked = (await collect(blocking.send_message(req)))[-1].task
    if asked.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
        fail(f"input-required: {asked}")
    done = (await collect(blocking.send_message(SendMessageRequest(message=msg("answer", "tck-complete-task-1", asked.id)))))[-1].task
    if done.status.state != TaskState.TASK_STATE_COMPLETED:
        fail(f"answer to input-required: {done}")
    await check_push()

    await check_isolation(base, other, dialect, done.id)

    if len(sys.argv) > 5:
        strict = await client_for(sys.argv[5], token, dialect, streaming=False)
        made = (await collect(strict.send_message(SendMessageRequest(message=msg("hi", "m-strict")))))[-1].task
        try:
            await strict.create_task_push_notification_config(TaskPushNotificationConfig(task_id=made.id, url=hook))
        except Exception as e:  # noqa: BLE001
            if "loopback" not in str(e):
                fail(f"loopback push refused for another reason: {e}")
        else:
            fail("a push config to 127.0.0.1 was accepted without the loopback switch")
        ok("loopback refused")
    httpd.shutdown()


asyncio.run(main())
