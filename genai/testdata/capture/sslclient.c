// A TLS client on OpenSSL linked in statically, as Node links it: it
// defines SSL_write and SSL_read in its own symbol table, with no
// libssl.so mapped. For the genai capture's tests and benchmark.
//
//   sslclient PORT CAFILE PATH MODEL N
//
// connects to 127.0.0.1:PORT, prints READY and waits for a line on stdin,
// then sends N streaming requests on the one keep-alive connection (the
// secret from $CAPTURE_SECRET in Authorization), reads each chunked
// response to its end, and prints NS_PER_REQUEST.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "sslclient: %s\n", what);
	ERR_print_errors_fp(stderr);
	exit(1);
}

// read_response reads one chunked response, to its last chunk.
static void read_response(SSL *ssl)
{
	static char buf[1 << 16];
	size_t have = 0;
	for (;;) {
		if (have == sizeof(buf))
			have = 0; // only the tail matters
		int n = SSL_read(ssl, buf + have, (int)(sizeof(buf) - have));
		if (n <= 0)
			die("SSL_read: connection ended mid-response");
		have += (size_t)n;
		if (have >= 5 && memcmp(buf + have - 5, "0\r\n\r\n", 5) == 0)
			return;
	}
}

int main(int argc, char **argv)
{
	if (argc != 6)
		die("usage: sslclient PORT CAFILE PATH MODEL N");
	int port = atoi(argv[1]), n = atoi(argv[5]);
	const char *secret = getenv("CAPTURE_SECRET");
	if (!secret)
		die("no CAPTURE_SECRET");

	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx || SSL_CTX_load_verify_locations(ctx, argv[2], NULL) != 1)
		die("CA file");
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		die("connect");
	SSL *ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	if (SSL_connect(ssl) != 1)
		die("SSL_connect");

	printf("READY\n");
	fflush(stdout);
	char line[16];
	if (!fgets(line, sizeof(line), stdin))
		die("no go line");

	char body[256], req[1024];
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++) {
		int bl = snprintf(body, sizeof(body),
				  "{\"model\":\"%s\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi %d\"}]}",
				  argv[4], i);
		int rl = snprintf(req, sizeof(req),
				  "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
				  "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				  argv[3], port, secret, bl, body);
		if (SSL_write(ssl, req, rl) != rl)
			die("SSL_write");
		read_response(ssl);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
	printf("NS_PER_REQUEST %.0f\n", ns / n);
	SSL_shutdown(ssl);
	SSL_free(ssl);
	close(fd);
	SSL_CTX_free(ctx);
	return 0;
}
