package tlsdecrypt_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"math/big"
	"net"
	"strings"
	"time"

	"github.com/xpuscope/xpuscope/internal/tlsdecrypt"
)

// capture stands in for the eBPF probe: it keeps the bytes each read(2)
// and write(2) moved on a socket, in order.
type capture struct {
	net.Conn
	events []struct {
		dir  tlsdecrypt.Dir
		data []byte
	}
}

func (c *capture) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.add(tlsdecrypt.Read, p[:n])
	return n, err
}

func (c *capture) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.add(tlsdecrypt.Write, p[:n])
	return n, err
}

func (c *capture) add(dir tlsdecrypt.Dir, p []byte) {
	if len(p) > 0 {
		c.events = append(c.events, struct {
			dir  tlsdecrypt.Dir
			data []byte
		}{dir, bytes.Clone(p)})
	}
}

// Example decrypts what a Go TLS client wrote and read, from the bytes on
// its socket and its key log.
func Example() {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	go func() { // a TLS server that answers "pong" to "ping"
		raw, err := ln.Accept()
		if err != nil {
			return
		}
		defer raw.Close()
		srv := tls.Server(raw, &tls.Config{Certificates: []tls.Certificate{exampleCert()}})
		if _, err := io.ReadFull(srv, make([]byte, 4)); err == nil {
			_, _ = srv.Write([]byte("pong"))
		}
		_, _ = io.Copy(io.Discard, srv)
	}()

	// The observed program: a client whose crypto/tls logs its secrets.
	var keyLog bytes.Buffer
	raw, _ := net.Dial("tcp", ln.Addr().String())
	sock := &capture{Conn: raw}
	client := tls.Client(sock, &tls.Config{InsecureSkipVerify: true, KeyLogWriter: &keyLog})
	_, _ = client.Write([]byte("ping"))
	_, _ = io.ReadFull(client, make([]byte, 4))
	_ = raw.Close()

	// The agent: secrets from the key log, bytes from the socket.
	keys := tlsdecrypt.NewKeys(1024)
	for _, line := range strings.Split(keyLog.String(), "\n") {
		f := strings.Fields(line) // LABEL <client random> <secret>, in hex
		if len(f) != 3 {
			continue
		}
		random, _ := hex.DecodeString(f[1])
		secret, _ := hex.DecodeString(f[2])
		if err := keys.Add(f[0], random, secret); err != nil {
			fmt.Println(err)
		}
	}
	conn := tlsdecrypt.NewConn(keys)
	defer conn.Close()
	for i, e := range sock.events {
		err := conn.Feed(e.dir, e.data, int64(i), func(dir tlsdecrypt.Dir, plaintext []byte, _ int64) {
			fmt.Printf("%s: %q\n", dir, plaintext)
		})
		if err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// write: "ping"
	// read: "pong"
}

// exampleCert returns a self-signed Ed25519 certificate.
func exampleCert() tls.Certificate {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: priv}
}
