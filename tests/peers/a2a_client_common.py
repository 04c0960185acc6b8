"""What the A2A client scripts share (a2a_server_client.py, a2a_bot_client.py): the pinned
Python a2a-sdk client (1.3.0) made for one dialect, a local push receiver and its check, the
other caller's and a wrong token's refusals, and the step report.
"""

import asyncio
import http.server
import json
import sys
import threading

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import CancelTaskRequest, GetTaskRequest, Message, Part, Role, SubscribeToTaskRequest


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


def push_receiver():
    """Starts a local push webhook; returns (server, its URL)."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/hook"


async def check_push():
    """Waits for a push carrying the final state, with the configured token and credentials
    (`tok-1`, `Bearer push-secret`); reports `push`."""
    for _ in range(200):
        if any("COMPLETED" in json.dumps(b) or "completed" in json.dumps(b) for _, b in Receiver.got):
            break
        await asyncio.sleep(0.1)
    else:
        fail(f"no push with the final state arrived: {Receiver.got}")
    headers = {k.lower(): v for k, v in Receiver.got[-1][0].items()}
    if headers.get("authorization") != "Bearer push-secret" or headers.get("x-a2a-notification-token") != "tok-1":
        fail(f"push headers: {headers}")
    ok("push")


async def check_isolation(base, other, dialect, task_id):
    """The caller with token `other` gets TaskNotFound for get, cancel and subscribe of
    `task_id`; a wrong token gets 401 with `WWW-Authenticate`. Reports `isolation`, `wrong token`."""
    intruder = await client_for(base, other, dialect, streaming=True)
    for name, call in [
        ("get", lambda: intruder.get_task(GetTaskRequest(id=task_id))),
        ("cancel", lambda: intruder.cancel_task(CancelTaskRequest(id=task_id))),
        ("subscribe", lambda: collect(intruder.subscribe(SubscribeToTaskRequest(id=task_id)))),
    ]:
        try:
            await call()
        except Exception as e:  # noqa: BLE001
            if "not found" not in str(e).lower() and "-32001" not in str(e):
                fail(f"another caller's {name}: {type(e).__name__}: {e}")
        else:
            fail(f"another caller could {name} this caller's task")
    ok("isolation")
    async with httpx.AsyncClient() as raw:
        r = await raw.post(f"{base}/a2a", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}},
                           headers={"Authorization": "Bearer wrong-token-wrong-token", "A2A-Version": "1.0"})
        if r.status_code != 401 or "bearer" not in r.headers.get("www-authenticate", "").lower():
            fail(f"wrong token: {r.status_code} {r.headers}")
    ok("wrong token")
