# An OpenAI-compatible server on Python's standard library (http.server
# and ssl, which use the system OpenSSL), for the genai capture's tests of
# the serving end.
#
#   server.py CERT KEY FIRST_DELAY_MS CHUNK_DELAY_MS CHUNKS
#
# listens on 127.0.0.1 over TLS on a free port, prints "PORT <n>", and
# answers each POST with a chat completion stream: CHUNKS content chunks,
# the first FIRST_DELAY_MS after the request was read, each later one,
# the finish chunk and the usage chunk CHUNK_DELAY_MS after the last;
# usage 17 in and 5 out (llmserver's), the request's model.
import http.server
import json
import socket
import ssl
import sys
import time

cert, key = sys.argv[1], sys.argv[2]
first, gap, chunks = int(sys.argv[3]) / 1000, int(sys.argv[4]) / 1000, int(sys.argv[5])


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # Each chunk goes at once, as a model server's do: no wait for
        # the client's delayed acknowledgement.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        model = req.get("model", "")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(data):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def event(obj):
            send(("data: " + json.dumps(obj) + "\n\n").encode())

        base = {"id": "chatcmpl-py1", "object": "chat.completion.chunk", "model": model}
        time.sleep(first)
        for i in range(chunks):
            if i:
                time.sleep(gap)
            event(dict(base, choices=[{"index": 0, "delta": {"content": "w%d " % i}, "finish_reason": None}]))
        time.sleep(gap)
        event(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
        time.sleep(gap)
        event(dict(base, choices=[], usage={"prompt_tokens": 17, "completion_tokens": 5, "total_tokens": 22}))
        send(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def log_message(self, *args):
        pass


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print("PORT", srv.server_address[1], flush=True)
srv.serve_forever()
