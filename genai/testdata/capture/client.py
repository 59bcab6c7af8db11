# A real HTTPS/HTTP client on Python's standard library (http.client and
# ssl, which use the system OpenSSL), for the genai capture tests.
#
#   client.py URL PATH MODEL N [CAFILE]
#
# sends N streaming requests to URL+PATH on ONE keep-alive connection, with
# the secret from $CAPTURE_SECRET in Authorization and x-api-key, reads
# each response whole, and exits non-zero on a bad one.
import http.client
import json
import os
import ssl
import sys
import urllib.parse

url, path, model, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
cafile = sys.argv[5] if len(sys.argv) > 5 else None
secret = os.environ["CAPTURE_SECRET"]
u = urllib.parse.urlsplit(url)
if u.scheme == "https":
    ctx = ssl.create_default_context(cafile=cafile)
    conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx)
else:
    conn = http.client.HTTPConnection(u.hostname, u.port)
for i in range(n):
    body = json.dumps({
        "model": model,
        "stream": True,
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "hello " + str(i)}],
    })
    conn.request("POST", path, body=body, headers={
        "Authorization": "Bearer " + secret,
        "x-api-key": secret,
        "anthropic-version": "2023-06-01",
        "Content-Type": "application/json",
    })
    resp = conn.getresponse()
    data = resp.read()
    if resp.status != 200 or (b"[DONE]" not in data and b"message_stop" not in data):
        sys.exit("bad response %d: %r" % (resp.status, data[:200]))
conn.close()
