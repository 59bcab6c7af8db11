# A real HTTPS/HTTP client on Python's standard library (http.client and
# ssl, which use the system OpenSSL), for the genai capture tests.
#
#   client.py URL PATHS MODELS N [CAFILE]
#
# sends N streaming requests to URL, the i-th to the i-th of the
# comma-separated PATHS with the i-th of MODELS (both taken in turn), on
# ONE keep-alive connection (http.client), or with urllib.request, which
# opens a new connection for each, when $CAPTURE_FRESH is set, or with
# asyncio's streams, whose TLS runs over OpenSSL's memory BIOs (the
# program, not OpenSSL, moves the bytes), a new connection for each,
# when $CAPTURE_ASYNC is set; over TLS 1.2 at most when $CAPTURE_TLS12
# is set; with the secret from $CAPTURE_SECRET in Authorization and x-api-key;
# reads each response whole, and exits non-zero on a bad one. /v1/files
# (the mock's REST call that is no LLM call) answers JSON, not a stream;
# a path with cut=N (the mock closes the connection after N chunks) must
# fail to read whole (with CAPTURE_FRESH).
import asyncio
import http.client
import json
import os
import ssl
import sys
import urllib.parse
import urllib.request

url, paths, models, n = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(","), int(sys.argv[4])
cafile = sys.argv[5] if len(sys.argv) > 5 else None
secret = os.environ["CAPTURE_SECRET"]
fresh = bool(os.environ.get("CAPTURE_FRESH"))
use_async = bool(os.environ.get("CAPTURE_ASYNC"))
u = urllib.parse.urlsplit(url)
ctx = ssl.create_default_context(cafile=cafile) if u.scheme == "https" else None
if ctx is not None and os.environ.get("CAPTURE_TLS12"):
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2


def connect():
    if ctx is not None:
        return http.client.HTTPSConnection(u.hostname, u.port, context=ctx)
    return http.client.HTTPConnection(u.hostname, u.port)


headers = {
    "Authorization": "Bearer " + secret,
    "x-api-key": secret,
    "anthropic-version": "2023-06-01",
    "Content-Type": "application/json",
}


def check(path, status, data):
    if status != 200:
        sys.exit("bad response %d: %r" % (status, data[:200]))
    if path != "/v1/files" and b"[DONE]" not in data and b"message_stop" not in data:
        sys.exit("unfinished stream: %r" % data[:200])


async def async_call(path, body):
    """One request on a connection of its own, HTTP/1.1 by hand over asyncio's TLS."""
    reader, writer = await asyncio.open_connection(u.hostname, u.port, ssl=ctx)
    head = "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nConnection: close\r\n" % (path, u.netloc, len(body))
    head += "".join("%s: %s\r\n" % kv for kv in headers.items()) + "\r\n"
    writer.write(head.encode() + body)
    await writer.drain()
    data = await reader.read()
    writer.close()
    try:
        await writer.wait_closed()
    except (ConnectionError, ssl.SSLError):
        pass
    status = int(data.split(b" ", 2)[1])
    check(path, status, data)


conn = None
for i in range(n):
    body = json.dumps({
        "model": models[i % len(models)],
        "stream": True,
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "hello " + str(i)}],
    }).encode()
    path = paths[i % len(paths)]
    if use_async:
        asyncio.run(async_call(path, body))
        continue
    if fresh:
        # urllib: a connection of its own for each request.
        req = urllib.request.Request(url + path, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, context=ctx) as resp:
                data = resp.read()
        except http.client.IncompleteRead:
            if "cut=" not in path:
                raise
            continue
        if "cut=" in path:
            sys.exit("the stream of %s was not cut" % path)
        check(path, resp.status, data)
        continue
    if conn is None:
        conn = connect()
    conn.request("POST", path, body=body, headers=headers)
    resp = conn.getresponse()
    check(path, resp.status, resp.read())
if conn is not None:
    conn.close()
