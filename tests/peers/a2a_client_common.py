"""What the A2A client scripts share (a2a_server_client.py, a2a_bot_client.py): the pinned
Python a2a-sdk client (1.3.0) made for one dialect, a local push receiver, and the step report.
"""

import http.server
import json
import sys

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role


def fail(why):
    print(f"FAIL {why}", flush=True)
    sys.exit(1)


def ok(step):
    print(f"ok {step}", flush=True)


class Receiver(http.server.BaseHTTPRequestHandler):
    """A push webhook: keeps every (headers, JSON body) it gets in `got`."""

    got = []

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        Receiver.got.append((dict(self.headers), json.loads(body or b"null")))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def msg(text, mid, task_id=None, context_id=None):
    return Message(message_id=mid, role=Role.ROLE_USER, parts=[Part(text=text)], task_id=task_id or "",
                   context_id=context_id or "")


async def client_for(base, token, dialect, streaming):
    """A client for the card at `base` that uses only its `dialect` (1.0 or 0.3) interface."""
    http_client = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    card = await A2ACardResolver(http_client, base).get_agent_card()
    keep = [i for i in card.supported_interfaces if i.protocol_version.startswith(dialect)]
    if not keep:
        fail(f"the card offers no {dialect} interface: {card.supported_interfaces}")
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(keep)
    config = ClientConfig(streaming=streaming, httpx_client=http_client)
    return ClientFactory(config).create(card)


async def collect(aiter):
    return [e async for e in aiter]
