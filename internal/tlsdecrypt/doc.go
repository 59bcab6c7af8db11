// Package tlsdecrypt turns the raw bytes of a TLS connection, as an eBPF
// probe on read(2)/write(2) sees them, back into the application-data
// plaintext, given the secrets the program's crypto/tls logs through
// Config.KeyLogWriter (the NSS key log format). With it an agent needs one
// probe per connection (the socket's reads and writes) instead of one per
// crypto/tls Read and Write call.
//
// # Use
//
// Feed each line of the key log to a Keys (NewKeys bounds how many
// connections' secrets it keeps), and each connection's bytes, in order
// within each direction, to its own Conn:
//
//	keys := tlsdecrypt.NewKeys(4096)
//	keys.Add(label, clientRandom, secret) // per key log line, hex-decoded
//
//	c := tlsdecrypt.NewConn(keys)
//	err := c.Feed(tlsdecrypt.Write, written, ts, emit) // bytes the endpoint sent
//	err = c.Feed(tlsdecrypt.Read, read, ts, emit)      // bytes it received
//	if c.Waiting() {
//		// after more key log lines:
//		err = c.Retry(emit)
//	}
//	c.Close()
//
// The two directions may be fed in any interleaving; the secrets may come
// after the bytes they decrypt (the records wait, up to MaxHeld bytes).
// The captured endpoint may be the client or the server: the direction
// whose first handshake message is a ClientHello is the client's.
//
// # What is decrypted
//
// TLS 1.3 (RFC 8446) with TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384
// and TLS_CHACHA20_POLY1305_SHA256, from the application traffic secrets
// (CLIENT_TRAFFIC_SECRET_0, SERVER_TRAFFIC_SECRET_0), following KeyUpdate.
// The handshake secrets are not used: the encrypted handshake records of
// each direction, those that do not decrypt under its application key
// before the first that does, are skipped (at most 32 records or 64 KiB;
// more is ErrDecrypt). 0-RTT early data is skipped the same way, and
// counts toward that bound.
//
// TLS 1.2 (RFC 5246) with the AEAD suites, AES-GCM (RFC 5288, 5289) and
// ChaCha20-Poly1305 (RFC 7905), from the master secret (CLIENT_RANDOM).
// Renegotiation is ErrUnsupported, and so are CBC and other suites, and
// other versions. Go's crypto/tls logs CLIENT_RANDOM only for full TLS 1.2
// handshakes, so the records of a resumed TLS 1.2 session wait for a
// secret that never comes (until Close, or ErrHeldFull).
//
// Only application data comes out; handshake messages, alerts (which end
// their direction) and change-cipher-spec records do not.
//
// # Cost
//
// A Conn keeps one AEAD per direction and decrypts into a buffer it owns:
// no allocation per record once keyed. Its memory is bounded by two
// partial records, one record of plaintext, a ServerHello and MaxHeld.
// Keys and Conn are not safe for concurrent use.
package tlsdecrypt
