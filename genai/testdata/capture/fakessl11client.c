// A client of fakessl11.c's libssl.so.1.1: prints READY, waits for a line
// on stdin, then makes N streamed chat completion calls on one "SSL",
// writing with SSL_write_ex and reading with SSL_read, and frees it.
//
//   fakessl11client PORT N
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ssl_st SSL;
int SSL_read(SSL *s, void *buf, int num);
int SSL_write_ex(SSL *s, const void *buf, size_t num, size_t *written);
void SSL_free(SSL *s);

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	static char ssl[64]; // opaque to the client
	SSL *s = (SSL *)ssl;
	const char *secret = getenv("CAPTURE_SECRET");
	const char *body = "{\"model\":\"gpt-4o-mini\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
	char req[1024], buf[4096];
	int rl = snprintf(req, sizeof(req),
			  "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nAuthorization: Bearer %s\r\n"
			  "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
			  argv[1], secret ? secret : "", strlen(body), body);
	puts("READY");
	fflush(stdout);
	if (!fgets(buf, sizeof(buf), stdin))
		return 1;
	for (int i = 0; i < atoi(argv[2]); i++) {
		size_t written;
		if (SSL_write_ex(s, req, (size_t)rl, &written) != 1 || written != (size_t)rl)
			return 1;
		while (SSL_read(s, buf, sizeof(buf)) > 0)
			;
	}
	SSL_free(s);
	return 0;
}
