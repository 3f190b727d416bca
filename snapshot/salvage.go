package snapshot

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// This file holds what a command says about a snapshot it opened: that it
// was cut short and how much was kept, and the devices it has.

// Salvaged reports whether s is the valid part of a file cut short (a
// WarnLost warning says what was lost).
func (s *Snapshot) Salvaged() bool {
	return slices.ContainsFunc(s.Warnings, func(w Warning) bool { return w.Kind == WarnLost })
}

// SalvageNote is the one line that says the snapshot s read from path was
// cut short: OpenWith's error err, the file's size, and what the kept part
// lost.
func SalvageNote(path string, s *Snapshot, err error) string {
	lost := ""
	for _, w := range s.Warnings {
		if w.Kind == WarnLost {
			lost = w.Message
		}
	}
	size := ""
	if st, serr := os.Stat(path); serr == nil {
		size = fmt.Sprintf(" (the file has %d bytes)", st.Size())
		if s.Format == FormatPickle && IsGzip(path) {
			size = fmt.Sprintf(" (of the stream inside a gzip file of %d bytes)", st.Size())
		}
	}
	return fmt.Sprintf("%v%s; analysing the valid part: %s", err, size, lost)
}

// IsGzip reports whether the file at path starts with the gzip magic.
func IsGzip(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [2]byte
	n, _ := f.Read(b[:])
	return n == 2 && b[0] == 0x1f && b[1] == 0x8b
}

// CheckDevice is --device's rule against s: a device s does not have is
// an error naming those it has; -1 (every device) always holds.
func (s *Snapshot) CheckDevice(device int) error {
	if device >= 0 && !slices.Contains(s.Devices(), device) {
		return fmt.Errorf("--device %d: %s has no such device; it has %s", device, s.Source, DeviceList(s.Devices()))
	}
	return nil
}

// DeviceList names devices for a message: "devices 0, 1", "device 0",
// "no device".
func DeviceList(devs []int) string {
	switch len(devs) {
	case 0:
		return "no device"
	case 1:
		return fmt.Sprintf("device %d", devs[0])
	}
	parts := make([]string, len(devs))
	for i, d := range devs {
		parts[i] = fmt.Sprint(d)
	}
	return "devices " + strings.Join(parts, ", ")
}
