"""An MCP server over stdio on the Python SDK (`mcp==2.3.0`) for the MCP e2e tests.

Tools: `add_tool` (adds `greet` and sends notifications/tools/list_changed), `ask` (asks the user
to pick a colour through elicitation/create and answers with the choice), `crash` (the process
exits mid-call), `fail` (a tool error), `pixel` (an image result).
"""

import os

from mcp.server import MCPServer
from mcp.server.mcpserver import Context, Image

app = MCPServer("py")

# A 1x1 PNG.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082"
)


def greet(name: str) -> str:
    """Greets someone."""
    return f"Hello, {name}!"


@app.tool()
async def add_tool(ctx: Context) -> str:
    """Adds the tool `greet`."""
    app.add_tool(greet)
    await ctx.session.send_tool_list_changed()
    return "added greet"


@app.tool()
async def ask(ctx: Context) -> str:
    """Asks the user for a colour."""
    schema = {
        "type": "object",
        "properties": {"colour": {"type": "string", "title": "Colour", "enum": ["red", "blue"]}},
        "required": ["colour"],
    }
    result = await ctx.session.elicit("Which colour?", schema)
    if result.action != "accept":
        return f"the user did not answer: {result.action}"
    return f"the user chose {result.content['colour']}"


@app.tool()
def crash() -> str:
    """Exits mid-call."""
    os._exit(3)


@app.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("this tool always fails")


@app.tool()
def pixel() -> Image:
    """A one-pixel image."""
    return Image(data=PIXEL, format="png")


if __name__ == "__main__":
    app.run()
