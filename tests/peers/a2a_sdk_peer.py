"""A scripted A2A agent on the official Python `a2a-sdk` (1.3.0), for Volcanic's A2A client tests.

Usage: python a2a_sdk_peer.py PORT MODE [FLAGS]
  MODE: v1 (A2A 1.0 only), both (1.0 with 0.3 compatibility), v03 (a card offering 0.3 only;
  the SDK still answers both dialects).
  FLAGS, comma-separated: `bearer=TOKEN` (every JSON-RPC call must carry `Authorization: Bearer
  TOKEN`, 401 otherwise), `nostream` (the card offers no streaming), `nopush` (nor push).

What a task does is chosen by the first word of the message's text:
  run N ...   works N seconds (WORKING), then completes with the artifact "done: <text>";
  ask ...     asks for input (INPUT_REQUIRED, "which one?"); the answer completes it with
              "thanks: <answer>";
  later N ... works N seconds, then asks for input as `ask` does;
  fail ...    fails with the status message "failed on purpose";
  echo ...    completes with the artifact "echo: <text>";
  anything    completes at once with the artifact "answer: <text>".
Prints "ready" on stdout once it listens.
"""

import asyncio
import sys

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.responses import PlainTextResponse

from a2a.helpers.proto_helpers import get_message_text, new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    TaskUpdater,
)
from a2a.types import a2a_pb2 as pb


class Scripted(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue) -> None:
        text = get_message_text(context.message) if context.message else ""
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if task.status.state == pb.TaskState.TASK_STATE_INPUT_REQUIRED:
            await updater.add_artifact([new_text_part(f"thanks: {text}")], name="result")
            await updater.complete()
            return
        word = (text.split() or [""])[0]
        if word == "run":
            try:
                secs = float(text.split()[1])
            except (IndexError, ValueError):
                secs = 1.0
            await updater.start_work()
            await asyncio.sleep(secs)
            await updater.add_artifact([new_text_part(f"done: {text}")], name="result")
            await updater.complete()
        elif word == "later":
            await updater.start_work()
            await asyncio.sleep(float(text.split()[1]) if len(text.split()) > 1 else 1.0)
            await updater.requires_input(
                new_text_message("which one?", context_id=task.context_id, task_id=task.id, role=pb.Role.ROLE_AGENT)
            )
        elif word == "ask":
            await updater.requires_input(
                new_text_message("which one?", context_id=task.context_id, task_id=task.id, role=pb.Role.ROLE_AGENT)
            )
        elif word == "fail":
            await updater.failed(
                new_text_message("failed on purpose", context_id=task.context_id, task_id=task.id, role=pb.Role.ROLE_AGENT)
            )
        elif word == "echo":
            await updater.add_artifact([new_text_part(f"echo: {text}")], name="echo")
            await updater.complete()
        else:
            await updater.add_artifact([new_text_part(f"answer: {text}")], name="result")
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue) -> None:
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


class Bearer(BaseHTTPMiddleware):
    def __init__(self, app, token: str):
        super().__init__(app)
        self.token = token

    async def dispatch(self, request, call_next):
        if request.method == "POST" and request.headers.get("authorization") != f"Bearer {self.token}":
            return PlainTextResponse("unauthorized", status_code=401, headers={"WWW-Authenticate": "Bearer"})
        return await call_next(request)


def card(port: int, mode: str, flags: dict) -> pb.AgentCard:
    url = f"http://127.0.0.1:{port}/"
    versions = {"v1": ["1.0"], "both": ["1.0", "0.3"], "v03": ["0.3"]}[mode]
    return pb.AgentCard(
        name="sdk peer",
        description="A scripted agent on a2a-sdk",
        version="1.0.0",
        supported_interfaces=[
            pb.AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=v) for v in versions
        ],
        capabilities=pb.AgentCapabilities(streaming="nostream" not in flags, push_notifications="nopush" not in flags),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[pb.AgentSkill(id="script", name="script", description="run, ask, fail, echo", tags=["test"])],
    )


def main() -> None:
    port, mode = int(sys.argv[1]), sys.argv[2]
    flags = dict((f.split("=", 1) + [""])[:2] for f in (sys.argv[3] if len(sys.argv) > 3 else "").split(",") if f)
    bearer = flags.get("bearer")
    the_card = card(port, mode, flags)
    push_store = InMemoryPushNotificationConfigStore()
    handler = DefaultRequestHandler(
        agent_executor=Scripted(),
        task_store=InMemoryTaskStore(),
        agent_card=the_card,
        push_config_store=push_store,
        push_sender=BasePushNotificationSender(httpx.AsyncClient(), push_store),
    )
    routes = create_agent_card_routes(the_card) + create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True)
    app = Starlette(routes=routes)
    if bearer:
        app.add_middleware(Bearer, token=bearer)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)

    async def run() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.05)
        print("ready", flush=True)
        await task

    asyncio.run(run())


if __name__ == "__main__":
    main()
