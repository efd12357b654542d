"""An independent MCP client for walkrag's tools: the `mcp` Python SDK from PyPI.

Lists the tools, calls search, outline, show and ask (with a progress callback), and fails
loudly if anything is missing. Over stdio it starts `walkrag mcp` itself; over HTTP it talks
to a running `walkrag serve` at URL/mcp.

    pip install mcp
    python3 serve/tests/mcp_client.py stdio walkrag mcp --index DIR --model local:smollm2-135m
    python3 serve/tests/mcp_client.py http http://127.0.0.1:8080/mcp [--token T]
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

QUESTION = "Who is the mayor of Velmora?"


def failed(result):
    """Whether a tool call is a tool error (`is_error` in SDK 2, `isError` before)."""
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


async def exercise(session):
    await session.initialize()
    tools = sorted(t.name for t in (await session.list_tools()).tools)
    assert {"ask", "outline", "search", "show"} <= set(tools), tools

    found = await session.call_tool("search", {"query": "cheese market", "k": 2})
    assert not failed(found), found
    hits = json.loads(found.content[0].text)["hits"]
    assert len(hits) == 2, hits

    outline = await session.call_tool("outline", {})
    assert not failed(outline), outline
    shown = await session.call_tool("show", {"id": hits[0]["section_id"]})
    assert json.loads(shown.content[0].text)["kind"] == "section", shown
    missing = await session.call_tool("show", {"id": "0badc0de"})
    assert failed(missing) and "not_found" in missing.content[0].text, missing

    progress = []

    async def on_progress(value, total, message):
        progress.append(message)

    answered = await session.call_tool(
        "ask",
        {"question": QUESTION, "strategy": "walk", "k": 2, "max_cycles": 2},
        progress_callback=on_progress,
    )
    assert not failed(answered), answered
    answer = json.loads(answered.content[0].text)
    assert answer["type"] == "answer", answer
    assert progress and progress[0].startswith("cycle"), progress
    return {
        "tools": tools,
        "search_hits": [h["chunk_id"] for h in hits],
        "progress": progress,
        "answer": answer["answer"],
        "termination": answer["termination"],
    }


async def main(argv):
    if argv[0] == "stdio":
        params = StdioServerParameters(command=argv[1], args=argv[2:])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                return await exercise(session)
    url = argv[1]
    headers = {}
    if "--token" in argv:
        headers["Authorization"] = "Bearer " + argv[argv.index("--token") + 1]
    import httpx2

    async with httpx2.AsyncClient(headers=headers, timeout=300) as client:
        async with streamable_http_client(url, http_client=client) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                return await exercise(session)


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1:])), indent=1))
