// A stand-in for OpenSSL 1.1.1's libssl.so.1.1, which Debian 12 does not
// ship, for the genai capture's tests: the exported SSL_read(_ex) and
// SSL_write(_ex) with 1.1.1's signatures, symbol versions (see the test)
// and shape, thin wrappers of hidden ssl_read_internal and
// ssl_write_internal. There is no TLS: writes are accepted, and reads
// return a canned streamed chat completion, one server-sent event a call.
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct ssl_st SSL;

// The response: its head, one chunk per event, and the last chunk.
static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
static const char *const events[] = {
	"data: {\"id\":\"c11\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"one\"}}]}\n\n",
	"data: {\"id\":\"c11\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"two\"}}]}\n\n",
	"data: {\"id\":\"c11\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
	"data: {\"id\":\"c11\",\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":2,\"total_tokens\":13}}\n\n",
	"data: [DONE]\n\n",
};
#define NEVENTS (sizeof(events) / sizeof(events[0]))
static size_t next; // 0: the head; 1..NEVENTS: the events; then the last chunk; then nothing

__attribute__((visibility("hidden"), noinline)) int ssl_read_internal(SSL *s, void *buf, size_t num, size_t *readbytes)
{
	int n;
	if (!s || next > NEVENTS + 1)
		return 0;
	if (next == 0)
		n = snprintf(buf, num, "%s", head);
	else if (next <= NEVENTS)
		n = snprintf(buf, num, "%zx\r\n%s\r\n", strlen(events[next - 1]), events[next - 1]);
	else
		n = snprintf(buf, num, "0\r\n\r\n");
	if (n < 0 || (size_t)n >= num)
		return -1;
	next++;
	*readbytes = (size_t)n;
	return 1;
}

__attribute__((visibility("hidden"), noinline)) int ssl_write_internal(SSL *s, const void *buf, size_t num, size_t *written)
{
	if (!s || !buf)
		return -1;
	next = 0; // a request: the response starts over
	*written = num;
	return 1;
}

int SSL_read(SSL *s, void *buf, int num)
{
	size_t readbytes;
	if (num < 0)
		return -1;
	int ret = ssl_read_internal(s, buf, (size_t)num, &readbytes);
	return ret > 0 ? (int)readbytes : ret;
}

int SSL_read_ex(SSL *s, void *buf, size_t num, size_t *readbytes)
{
	int ret = ssl_read_internal(s, buf, num, readbytes);
	return ret < 0 ? 0 : ret;
}

int SSL_write(SSL *s, const void *buf, int num)
{
	size_t written;
	if (num < 0)
		return -1;
	int ret = ssl_write_internal(s, buf, (size_t)num, &written);
	return ret > 0 ? (int)written : ret;
}

int SSL_write_ex(SSL *s, const void *buf, size_t num, size_t *written)
{
	int ret = ssl_write_internal(s, buf, num, written);
	return ret < 0 ? 0 : ret;
}

void SSL_free(SSL *s)
{
	(void)s;
}
