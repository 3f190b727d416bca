package main

import (
	"errors"
	"fmt"
)

// Exit statuses. Only a failed check exits 1, so that a CI gate can read
// status 1 as "a limit was broken" and anything else non-zero as "the gate
// itself could not run".
const (
	exitOK          = 0
	exitCheckFailed = 1
	exitError       = 2 // bad usage, unreadable input, or any other error
)

// exitCode maps the error run returned to the process exit status.
func exitCode(err error) int {
	var cf *checkFailedError
	var es interface{ ExitStatus() int }
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &cf):
		return exitCheckFailed
	case errors.As(err, &es):
		return es.ExitStatus() // memscope capture: the captured script's own status
	default:
		// usageError, inputError and everything else.
		return exitError
	}
}

// usageError is a command line that memscope cannot run: an unknown command
// or flag, a bad flag value, a missing or extra argument. run prints it with
// a pointer to the help of cmd, or to the overview.
type usageError struct {
	cmd         string // the command being run; "" for memscope itself
	msg         string
	seeOverview bool // point to the list of commands, not to cmd's help
}

func (e *usageError) Error() string {
	if e.cmd == "" {
		return e.msg
	}
	return e.cmd + ": " + e.msg
}

// usageErrorf returns a usageError. A command's run function may leave the
// command name out: run fills it in.
func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// inputError is input memscope cannot read: a missing file, or one that does
// not decode as what the command expects. The wrapped error names the file
// and says what was wrong.
type inputError struct{ err error }

func (e *inputError) Error() string { return e.err.Error() }
func (e *inputError) Unwrap() error { return e.err }

// badInput marks err as the input's fault; it returns nil for a nil err.
func badInput(err error) error {
	if err == nil {
		return nil
	}
	return &inputError{err}
}

// checkFailedError is a limit the input broke (a peak over --max-peak, a
// leak): the command worked and the answer is "no". Its message says which
// limit and by how much.
type checkFailedError struct{ msg string }

func (e *checkFailedError) Error() string { return "check failed: " + e.msg }

func checkFailedf(format string, args ...any) error {
	return &checkFailedError{msg: fmt.Sprintf(format, args...)}
}
