#!/usr/bin/env python3
"""A PostgreSQL protocol-counting proxy (round trips per unit of work; see README.md).

Listens on --listen (default 127.0.0.1:6543), forwards every connection to --upstream
(default 127.0.0.1:5432), and tallies the client's messages. Each Sync ('S') and each simple
Query ('Q') is one round trip the client waits on; Bind ('B') names the prepared statement it
executes (mapped to its text through the Parse that named it); a Sync with no Parse or Bind
since the last one is a ping. SSL requests are refused ('N'), so the stream stays readable.

On SIGUSR1 (or at exit) the counts so far are written to --out as JSON and reset:
{"round_trips", "syncs", "queries", "pings", "parses", "binds", "by_statement": {text: n}}.
Run the bench with its URL on the proxy's port; send SIGUSR1 at the window's edges.
"""
import argparse, asyncio, collections, itertools, json, signal, struct, time

counts = collections.Counter()
by_stmt = collections.Counter()


def reset_and_dump(path):
    data = dict(counts)
    data["by_statement"] = dict(by_stmt.most_common())
    with open(path, "a") as f:
        f.write(json.dumps(data) + "\n")
    counts.clear()
    by_stmt.clear()


async def pump_server(reader, writer):
    try:
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                break
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def handle(creader, cwriter, upstream):
    host, port = upstream
    # Startup: refuse SSL / GSS requests, forward the startup message as is.
    while True:
        head = await creader.readexactly(8)
        length, code = struct.unpack("!ii", head)
        if code in (80877103, 80877104):  # SSLRequest, GSSENCRequest
            cwriter.write(b"N")
            await cwriter.drain()
            continue
        rest = await creader.readexactly(length - 8)
        startup = head + rest
        break
    sreader, swriter = await asyncio.open_connection(host, port)
    swriter.write(startup)
    back = asyncio.create_task(pump_server(sreader, cwriter))
    names = {}  # prepared statement name -> text (per connection)
    since_sync = False
    conn = next(CONNECTIONS)
    pending = []  # the statements bound since the last Sync, for --trace
    try:
        while True:
            head = await creader.readexactly(5)
            kind = head[:1]
            (length,) = struct.unpack("!i", head[1:])
            body = await creader.readexactly(length - 4)
            if kind == b"P":
                name, rest = body.split(b"\0", 1)
                text = rest.split(b"\0", 1)[0].decode(errors="replace")
                names[name] = text
                counts["parses"] += 1
                since_sync = True
            elif kind == b"B":
                stmt = body.split(b"\0", 2)[1]
                text = names.get(stmt, "<unnamed>")
                by_stmt[" ".join(text.split())[:160]] += 1
                pending.append(" ".join(text.split())[:60])
                counts["binds"] += 1
                since_sync = True
            elif kind == b"S":
                counts["syncs"] += 1
                counts["round_trips"] += 1
                if not since_sync:
                    counts["pings"] += 1
                since_sync = False
                trace(conn, "S " + " | ".join(pending))
                pending.clear()
            elif kind == b"Q":
                text = body.rstrip(b"\0").decode(errors="replace")
                counts["queries"] += 1
                counts["round_trips"] += 1
                by_stmt["Q: " + " ".join(text.split())[:160]] += 1
                trace(conn, "Q " + " ".join(text.split())[:200])
            swriter.write(head + body)
            await swriter.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        swriter.close()
        back.cancel()


CONNECTIONS = itertools.count(1)
TRACE = None  # --trace: one line per round trip (time, connection, what it carried)


def trace(conn, what):
    if TRACE is not None:
        TRACE.write(f"{time.monotonic():.6f} c{conn} {what}\n")


async def main():
    global TRACE
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", default="127.0.0.1:6543")
    ap.add_argument("--upstream", default="127.0.0.1:5432")
    ap.add_argument("--out", default="pgcount.jsonl")
    ap.add_argument("--trace", help="also write each round trip, in order, to this file")
    a = ap.parse_args()
    if a.trace:
        TRACE = open(a.trace, "w", buffering=1 << 16)
    lh, lp = a.listen.rsplit(":", 1)
    uh, up = a.upstream.rsplit(":", 1)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, reset_and_dump, a.out)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    server = await asyncio.start_server(lambda r, w: handle(r, w, (uh, int(up))), lh, int(lp))
    async with server:
        await stop.wait()
    reset_and_dump(a.out)


asyncio.run(main())
