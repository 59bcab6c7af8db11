package tlsdecrypt

import "errors"

// The errors Feed and Retry return wrap one of these (test with errors.Is);
// the wrapping text says what was tried and what was missing. All of them
// are sticky: once returned, the Conn does nothing more.
var (
	// ErrNotTLS: the bytes are not a TLS connection the package can follow
	// (the first record of a direction is not a TLS handshake record, a
	// record header or handshake message is malformed, or the records
	// break the protocol's order).
	ErrNotTLS = errors.New("tlsdecrypt: not TLS")
	// ErrUnsupported: a protocol version other than TLS 1.2 and 1.3, a
	// cipher suite the package does not decrypt (the error names it in
	// hex), or TLS 1.2 renegotiation.
	ErrUnsupported = errors.New("tlsdecrypt: unsupported")
	// ErrDecrypt: a record failed authentication where it must succeed,
	// a logged secret does not fit the negotiated suite, or, in TLS 1.3,
	// no record of a direction decrypted within the bound on skipped
	// handshake records (see Conn.Feed).
	ErrDecrypt = errors.New("tlsdecrypt: decryption failed")
	// ErrHeldFull: the records held for missing secrets (or for the peer's
	// ServerHello) would exceed MaxHeld bytes.
	ErrHeldFull = errors.New("tlsdecrypt: held records over MaxHeld")
	// ErrRecordTooLong: a record is longer than the version allows
	// (TLS 1.3: 2^14+256 bytes of ciphertext; TLS 1.2: 2^14+2048).
	ErrRecordTooLong = errors.New("tlsdecrypt: record too long")
	// ErrClosed: Feed or Retry after Close.
	ErrClosed = errors.New("tlsdecrypt: connection closed")
)
