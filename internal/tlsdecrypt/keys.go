package tlsdecrypt

import (
	"container/list"
	"fmt"
)

// Labels of the NSS key log the decoder uses; other labels are ignored by
// Keys.Add (it returns nil for them).
const (
	// LabelClientTraffic is the TLS 1.3 client application traffic secret
	// (client_application_traffic_secret_0).
	LabelClientTraffic = "CLIENT_TRAFFIC_SECRET_0"
	// LabelServerTraffic is the TLS 1.3 server application traffic secret
	// (server_application_traffic_secret_0).
	LabelServerTraffic = "SERVER_TRAFFIC_SECRET_0"
	// LabelTLS12 is the TLS 1.2 line: its secret is the 48-byte master
	// secret.
	LabelTLS12 = "CLIENT_RANDOM"
)

// Which secret of an entry a lookup wants.
const (
	secretClient = iota // LabelClientTraffic
	secretServer        // LabelServerTraffic
	secretMaster        // LabelTLS12
)

// keyEntry holds the secrets logged for one client random.
type keyEntry struct {
	random  [32]byte
	secrets [3][48]byte // by secretClient, secretServer, secretMaster
	lens    [3]uint8    // 0: not logged
	elem    *list.Element
}

func (e *keyEntry) zero() {
	clear(e.secrets[0][:])
	clear(e.secrets[1][:])
	clear(e.secrets[2][:])
	e.lens = [3]uint8{}
}

// Keys is a bounded store of logged secrets by client random. Not safe for
// concurrent use.
//
// It holds at most the number of client randoms given to NewKeys; adding
// a new client random to a full store drops the oldest one (by first Add),
// zeroing its secrets, and counts it in Dropped.
type Keys struct {
	max     int
	entries map[[32]byte]*keyEntry
	order   *list.List // of *keyEntry, oldest first
	dropped int64
}

// NewKeys returns an empty store for the secrets of at most max client
// randoms (a max below 1 is taken as 1). When it is full, adding a new
// client random drops the oldest entry, and Dropped counts it.
func NewKeys(max int) *Keys {
	if max < 1 {
		max = 1
	}
	return &Keys{max: max, entries: make(map[[32]byte]*keyEntry), order: list.New()}
}

// Add stores one line of an NSS key log: its label, client random and
// secret (already decoded from hex). A label other than LabelClientTraffic,
// LabelServerTraffic and LabelTLS12 is ignored and Add returns nil. A client
// random that is not 32 bytes, a TLS 1.3 secret that is not 32 or 48 bytes,
// or a master secret that is not 48 bytes is an error saying which; the
// store is then unchanged. Adding a label already present for the client
// random replaces its secret.
func (k *Keys) Add(label string, clientRandom, secret []byte) error {
	var which int
	switch label {
	case LabelClientTraffic:
		which = secretClient
	case LabelServerTraffic:
		which = secretServer
	case LabelTLS12:
		which = secretMaster
	default:
		return nil
	}
	if len(clientRandom) != 32 {
		return fmt.Errorf("tlsdecrypt: %s: client random is %d bytes, want 32", label, len(clientRandom))
	}
	switch {
	case which == secretMaster && len(secret) != 48:
		return fmt.Errorf("tlsdecrypt: %s: master secret is %d bytes, want 48", label, len(secret))
	case which != secretMaster && len(secret) != 32 && len(secret) != 48:
		return fmt.Errorf("tlsdecrypt: %s: traffic secret is %d bytes, want 32 (SHA-256 suites) or 48 (SHA-384)", label, len(secret))
	}
	r := [32]byte(clientRandom)
	e := k.entries[r]
	if e == nil {
		if len(k.entries) >= k.max {
			k.dropOldest()
		}
		e = &keyEntry{random: r}
		e.elem = k.order.PushBack(e)
		k.entries[r] = e
	}
	clear(e.secrets[which][:])
	copy(e.secrets[which][:], secret)
	e.lens[which] = uint8(len(secret))
	return nil
}

func (k *Keys) dropOldest() {
	front := k.order.Front()
	if front == nil {
		return
	}
	e := front.Value.(*keyEntry)
	k.remove(e)
	k.dropped++
}

func (k *Keys) remove(e *keyEntry) {
	e.zero()
	k.order.Remove(e.elem)
	delete(k.entries, e.random)
}

// Forget drops the entry of clientRandom, if any, and zeroes its secrets.
// It is not counted in Dropped.
func (k *Keys) Forget(clientRandom [32]byte) {
	if e := k.entries[clientRandom]; e != nil {
		k.remove(e)
	}
}

// Has reports whether secrets of clientRandom are held.
func (k *Keys) Has(clientRandom [32]byte) bool {
	_, ok := k.entries[clientRandom]
	return ok
}

// Len returns the number of client randoms held.
func (k *Keys) Len() int { return len(k.entries) }

// Dropped returns the number of entries dropped to make room for newer
// ones since NewKeys.
func (k *Keys) Dropped() int64 { return k.dropped }

// secret returns the logged secret of kind which for clientRandom, or nil.
// The slice aliases the store: copy it before the next Add or Forget.
// A nil *Keys has no secrets.
func (k *Keys) secret(clientRandom *[32]byte, which int) []byte {
	if k == nil {
		return nil
	}
	e := k.entries[*clientRandom]
	if e == nil || e.lens[which] == 0 {
		return nil
	}
	return e.secrets[which][:e.lens[which]]
}
