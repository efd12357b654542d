"""The page at `/` in headless Chromium, driven over the DevTools protocol: a question typed
and submitted, the events listed as they arrive (facts before the answer), a citation clicked
to open its section, and a screenshot.

    pip install websockets
    walkrag serve --model local:qwen2.5-coder-0.5b --addr 127.0.0.1:8080 &
    python3 serve/tests/page_check.py http://127.0.0.1:8080/ "QUESTION" docs/img/serve-page.png
"""

import asyncio
import base64
import json
import subprocess
import sys
import tempfile
import time
import urllib.request

import websockets


async def main(url, question, shot):
    profile = tempfile.mkdtemp()
    chrome = subprocess.Popen(
        ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
         "--remote-debugging-port=9333", f"--user-data-dir={profile}",
         "--window-size=1400,1000", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                pages = json.load(urllib.request.urlopen("http://127.0.0.1:9333/json"))
                target = next(p for p in pages if p["type"] == "page")
                break
            except Exception:
                time.sleep(0.2)
        async with websockets.connect(target["webSocketDebuggerUrl"], max_size=None) as ws:
            ids = iter(range(1, 10**6))

            async def send(method, **params):
                i = next(ids)
                await ws.send(json.dumps({"id": i, "method": method, "params": params}))
                while True:
                    msg = json.loads(await ws.recv())
                    if msg.get("id") == i:
                        if "error" in msg:
                            raise RuntimeError(msg["error"])
                        return msg["result"]

            async def js(expr):
                r = await send("Runtime.evaluate", expression=expr, returnByValue=True,
                               awaitPromise=True)
                return r["result"].get("value")

            await send("Page.enable")
            await send("Page.navigate", url=url)
            for _ in range(100):
                if await js("document.readyState") == "complete" and await js("!!document.getElementById('ask')"):
                    break
                await asyncio.sleep(0.1)
            await js(f"document.getElementById('question').value = {json.dumps(question)}")
            await js("document.getElementById('k').value = '3'")
            await js("document.getElementById('go').click()")
            # The kinds of the boxes in the log, in order, until the answer has its metadata.
            order = []
            for _ in range(1800):
                order = await js("[...document.querySelectorAll('#log .ev')].map(e => e.className.replace('ev ', ''))")
                done = await js("!!document.querySelector('.answer .meta')")
                failed = await js("!!document.querySelector('.error')")
                if done or failed:
                    break
                await asyncio.sleep(0.2)
            assert not failed, await js("document.querySelector('.error').textContent")
            kinds = [k.split()[0] for k in order]
            first_answer = kinds.index("answer")
            facts_before = sum(1 for k in kinds[:first_answer] if k == "fact")
            cites = await js("[...document.querySelectorAll('.answer a.cite')].map(a => a.dataset.id)")
            opened = None
            if cites:
                await js("document.querySelector('.answer a.cite').click()")
                for _ in range(50):
                    opened = await js("document.getElementById('panel').textContent")
                    if opened and not opened.startswith("Loading") and not opened.startswith("The cited"):
                        break
                    await asyncio.sleep(0.1)
            await asyncio.sleep(0.3)
            png = await send("Page.captureScreenshot", format="png")
            with open(shot, "wb") as f:
                f.write(base64.b64decode(png["data"]))
            report = {"events": kinds, "facts_before_answer": facts_before,
                      "citations": cites, "panel": (opened or "")[:200]}
            print(json.dumps(report, indent=1))
            assert facts_before > 0, "no fact before the answer"
            if cites:
                assert cites[0].split(".")[0] in opened, "the citation opened its section"
    finally:
        chrome.terminate()
        chrome.wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
