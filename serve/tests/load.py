"""A bounded load test of a running `walkrag serve` on loopback: concurrent search clients,
then concurrent ask clients; every request must be answered or refused with 429 (none lost,
no other status), and the server's memory is read before and after.

    walkrag serve --model local:smollm2-135m --queue 4 --addr 127.0.0.1:8080 &
    python3 serve/tests/load.py http://127.0.0.1:8080 SERVER_PID [--search 50x40] [--ask 8]
"""

import json
import statistics
import sys
import threading
import time

import requests


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024


def searches(url, clients, each):
    times, statuses, lock = [], {}, threading.Lock()

    def client(i):
        s = requests.Session()
        for j in range(each):
            t = time.perf_counter()
            r = s.post(f"{url}/v1/search", json={"query": f"river town {i} {j}", "k": 5})
            dt = time.perf_counter() - t
            with lock:
                statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
                times.append(dt)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    times.sort()
    return {
        "clients": clients, "requests": len(times), "statuses": statuses,
        "requests_per_s": round(len(times) / wall, 1),
        "p50_ms": round(1000 * statistics.median(times), 1),
        "p99_ms": round(1000 * times[int(0.99 * (len(times) - 1))], 1),
    }


def asks(url, clients):
    results, lock = [], threading.Lock()
    go = threading.Barrier(clients)

    def client(i):
        go.wait()
        t = time.perf_counter()
        body = {"question": "Who is the mayor of Velmora?", "strategy": "single", "k": 2}
        r = requests.post(f"{url}/v1/ask", json=body, stream=True)
        out = {"status": r.status_code}
        if r.status_code == 429:
            out["retry_after"] = r.headers.get("retry-after")
            out["code"] = r.json()["error"]["code"]
        else:
            places, started = [], None
            for line in r.iter_lines(decode_unicode=True):
                if not line or not line.startswith("data:"):
                    continue
                event = json.loads(line[5:])
                if event["type"] == "queued":
                    places.append(event["position"])
                elif started is None:
                    started = time.perf_counter() - t
                if event["type"] in ("answer", "error"):
                    out["last"] = event["type"]
            out["places"] = places
            out["wait_s"] = round(started, 2)
            out["total_s"] = round(time.perf_counter() - t, 2)
        with lock:
            results.append(out)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def main(url, pid, search="50x40", ask=8):
    clients, each = (int(x) for x in search.split("x"))
    before = rss_mib(pid)
    report = {"rss_mib_before": round(before, 1)}
    report["search"] = searches(url, clients, each)
    report["rss_mib_after_search"] = round(rss_mib(pid), 1)
    runs = asks(url, int(ask))
    served = [r for r in runs if r["status"] == 200]
    refused = [r for r in runs if r["status"] == 429]
    report["ask"] = {
        "clients": int(ask), "answered": len(served), "refused_429": len(refused),
        "other": len(runs) - len(served) - len(refused),
        "all_ended_with_answer": all(r.get("last") == "answer" for r in served),
        "queue_waits_s": sorted(r["wait_s"] for r in served),
        "retry_after_s": sorted(int(r["retry_after"]) for r in refused),
    }
    report["rss_mib_after_ask"] = round(rss_mib(pid), 1)
    health = requests.get(f"{url}/healthz").json()
    report["healthz"] = {k: health[k] for k in ("running", "waiting", "completed", "cancelled", "failed")}
    print(json.dumps(report, indent=1))
    assert report["search"]["statuses"] == {200: clients * each}, report["search"]
    assert report["ask"]["other"] == 0 and report["ask"]["all_ended_with_answer"], report["ask"]
    assert health["running"] == 0 and health["waiting"] == 0, health


if __name__ == "__main__":
    args = sys.argv[1:]
    opts = {}
    for flag in ("--search", "--ask"):
        if flag in args:
            i = args.index(flag)
            opts[flag[2:]] = args[i + 1]
            del args[i:i + 2]
    main(args[0], int(args[1]), **opts)
