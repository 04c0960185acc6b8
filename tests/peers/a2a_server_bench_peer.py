"""The Python a2a-sdk 1.3.0 server with a scripted executor, the reference of the A2A server
benchmark (`a2a-bench`): every task goes WORKING, one text artifact, COMPLETED, as the scripted
executor of our server does for the same message.

usage: a2a_server_bench_peer.py PORT   (prints `listening on http://127.0.0.1:PORT` when up)
"""

import sys

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, Part
from starlette.applications import Starlette


class Scripted(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        await updater.start_work()
        text = context.get_user_input()
        await updater.add_artifact([Part(text=f"echo: {text}")], name="answer", last_chunk=True)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def main() -> None:
    port = int(sys.argv[1])
    url = f"http://127.0.0.1:{port}/"
    card = AgentCard(
        name="a2a-sdk bench peer",
        description="reference server for the benchmark",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )
    handler = DefaultRequestHandler(agent_executor=Scripted(), task_store=InMemoryTaskStore(), agent_card=card)
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/")
    app = Starlette(routes=routes)
    print(f"listening on {url.rstrip('/')}", flush=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


main()
