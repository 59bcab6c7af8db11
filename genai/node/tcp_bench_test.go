package node

import (
	"io"
	"net"
	"testing"

	"github.com/xpuscope/xpuscope/internal/testutil/netlab"
)

// BenchmarkTCPOverhead: the TCP part alone (its socket-state,
// retransmit and reset programs) on TCP traffic between two network
// namespaces joined by a veth pair (netlab), the server's port watched as
// a model server's. "lossy": a op sends 256 KiB on one connection and
// waits for the server's byte saying it has them all, while one in 50 of
// the segments to the server is dropped at random (nftables: the kernel
// has no netem), which the client's kernel retransmits; "churn": a op
// opens a connection, sends 100 bytes, reads them back and closes, as a
// client that opens a connection a call does (each socket goes through
// its states). Besides on/off and bpf/off (overhead's), "retransmits/op"
// is the client namespace's RetransSegs a op, over the runs with the
// Source and without.
func BenchmarkTCPOverhead(b *testing.B) {
	lab := netlab.New(b)
	bulk := lab.Listen(b)
	echo := lab.Listen(b)
	const chunk = 256 << 10
	go serve(bulk, func(c net.Conn) {
		buf := make([]byte, chunk)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write([]byte{1}); err != nil {
				return
			}
		}
	})
	go serve(echo, func(c net.Conn) {
		buf := make([]byte, 100)
		if _, err := io.ReadFull(c, buf); err == nil {
			_, _ = c.Write(buf)
		}
	})
	ports := WithServerPorts(uint16(bulk.Addr().(*net.TCPAddr).Port), uint16(echo.Addr().(*net.TCPAddr).Port))
	tcpOnly := []Option{ports, WithPageCache(false), WithFileSyscalls(false)}

	b.Run("lossy", func(b *testing.B) {
		c, err := lab.Dial(bulk.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		loss := lab.DropToServer(b, 50)
		defer loss.Close()
		data := make([]byte, chunk)
		ack := make([]byte, 1)
		before := lab.Client.Counters(b)["RetransSegs"]
		overhead(b, false, func(b *testing.B) {
			if _, err := c.Write(data); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, ack); err != nil {
				b.Fatal(err)
			}
		}, tcpOnly...)
		ops := 2 * overheadRounds * b.N // half of them with the Source
		b.ReportMetric(float64(lab.Client.Counters(b)["RetransSegs"]-before)/float64(ops), "retransmits/op")
	})
	b.Run("churn", func(b *testing.B) {
		msg := make([]byte, 100)
		overhead(b, false, func(b *testing.B) {
			c, err := lab.Dial(echo.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.Write(msg); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, msg); err != nil {
				b.Fatal(err)
			}
			c.Close()
		}, tcpOnly...)
	})
}
