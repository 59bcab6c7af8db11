package tlsdecrypt

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

const chachaChildEnv = "TLSDECRYPT_TEST_CHACHA_CHILD"

// TestTLS13ChaCha20 runs a real TLS 1.3 handshake that negotiates
// TLS_CHACHA20_POLY1305_SHA256. Go picks ChaCha20 over AES-GCM only when
// it lacks AES hardware, which GODEBUG=cpu.aes=off pretends; the setting is
// read at start, so the test runs itself again in a child process.
func TestTLS13ChaCha20(t *testing.T) {
	if os.Getenv(chachaChildEnv) == "1" {
		for _, sc := range payloads() {
			s := runSession(t, sc)
			require.Equal(t, uint16(tls.TLS_CHACHA20_POLY1305_SHA256), s.state.CipherSuite, "the child negotiated ChaCha20")
			checkSession(t, s)
		}
		fmt.Println("child: TLS 1.3 ChaCha20-Poly1305 decrypted")
		return
	}
	testutil.Native(t, "the test binary run again as a program")
	cmd := exec.Command(os.Args[0], "-test.run=^TestTLS13ChaCha20$", "-test.count=1", "-test.v")
	godebug := "cpu.aes=off"
	if g := os.Getenv("GODEBUG"); g != "" {
		godebug = g + "," + godebug
	}
	cmd.Env = append(os.Environ(), chachaChildEnv+"=1", "GODEBUG="+godebug)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child:\n%s", out)
	require.Contains(t, string(out), "child: TLS 1.3 ChaCha20-Poly1305 decrypted", "child:\n%s", out)
}

// waitFor polls until cond holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool, out fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; openssl said:\n%s", what, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOpenSSLKeyUpdate: Go's client against `openssl s_server`, which
// logs its secrets with -keylogfile, and, on its "K" command, sends a
// KeyUpdate that requests one back, which Go's client answers. Covers the
// TLS 1.3 suites Go's client does not pick by itself (AES-256-GCM,
// ChaCha20-Poly1305) and a real KeyUpdate each way. Skipped without an
// openssl binary.
func TestOpenSSLKeyUpdate(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		testutil.SkipOrFail(t, "no openssl binary (scripts/install-test-deps.sh installs it)")
	}
	testCerts(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))

	for _, suite := range []string{"TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256"} {
		t.Run(suite, func(t *testing.T) {
			keyLogFile := filepath.Join(dir, suite+".keys")
			cmd := exec.Command(openssl, "s_server", "-accept", "127.0.0.1:0", "-naccept", "1",
				"-cert", certFile, "-key", keyFile, "-tls1_3", "-ciphersuites", suite, "-keylogfile", keyLogFile)
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			var out testutil.SyncBuffer // the process's output
			cmd.Stdout, cmd.Stderr = &out, &out
			require.NoError(t, cmd.Start())
			defer func() {
				_ = stdin.Close()
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}()
			accept := regexp.MustCompile(`ACCEPT 127\.0\.0\.1:(\d+)`)
			waitFor(t, "ACCEPT", func() bool { return accept.MatchString(out.String()) }, &out)
			addr := "127.0.0.1:" + accept.FindStringSubmatch(out.String())[1]

			raw, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer raw.Close()
			rec := &recorder{Conn: raw}
			conn := tls.Client(rec, &tls.Config{RootCAs: rootPool, ServerName: "tlsdecrypt.test", MinVersion: tls.VersionTLS13})
			require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
			require.NoError(t, conn.Handshake())
			require.Equal(t, suite, tls.CipherSuiteName(conn.ConnectionState().CipherSuite))

			_, err = conn.Write([]byte("ping-before-update\n"))
			require.NoError(t, err)
			waitFor(t, "the first line at the server", func() bool { return strings.Contains(out.String(), "ping-before-update") }, &out)

			// K: KeyUpdate with update_requested; then a line to the client
			// under the server's next key.
			_, err = io.WriteString(stdin, "K\n")
			require.NoError(t, err)
			// s_server reads its terminal before its socket, so once it
			// prints this line it has taken "K" alone as a command.
			_, err = conn.Write([]byte("sync\n"))
			require.NoError(t, err)
			waitFor(t, "the sync line at the server", func() bool { return strings.Contains(out.String(), "sync") }, &out)
			_, err = io.WriteString(stdin, "pong-after-update\n")
			require.NoError(t, err)
			got, err := bufio.NewReader(conn).ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "pong-after-update\n", got)

			// Go answered the request with its own KeyUpdate before this.
			_, err = conn.Write([]byte("ping-after-update\n"))
			require.NoError(t, err)
			waitFor(t, "the second line at the server", func() bool { return strings.Contains(out.String(), "ping-after-update") }, &out)
			_ = conn.Close()

			logText, err := os.ReadFile(keyLogFile)
			require.NoError(t, err)
			keys := NewKeys(4)
			loadKeys(t, keys, string(logText))
			c := NewConn(keys)
			var k collector
			require.NoError(t, feedEvents(c, rec.snapshot(), &k))
			require.Equal(t, "ping-before-update\nsync\nping-after-update\n", string(k.text(Write)))
			require.Equal(t, "pong-after-update\n", string(k.text(Read)))

			// Both directions moved past their logged secret.
			random, ok := c.ClientRandom()
			require.True(t, ok)
			for _, d := range []struct {
				dir   Dir
				which int
			}{{Write, secretClient}, {Read, secretServer}} {
				st := &c.dirs[d.dir]
				require.NotEqual(t, keys.secret(&random, d.which), st.secret[:st.secretLen], "%s direction updated its key", d.dir)
			}
		})
	}
}
