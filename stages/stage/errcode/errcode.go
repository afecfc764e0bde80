// Package errcode is piship's one error vocabulary: every code an error
// of piship carries is declared here once, with the exit code it gives
// and a line of what to do (docs/errors.md lists them, and a test keeps
// the two the same). An error type carries its code by implementing
// Coder; Of and Exit read it with errors.As, never from a message.
//
// It imports the standard library only, so the engine, the graph and the
// launcher (cmd/piship-launch) link it without growing.
package errcode

import (
	"errors"
	"fmt"
	"strings"
)

// The codes. Each error piship prints starts with one of them: "CODE: ...".
const (
	UsageInvalid        = "USAGE_INVALID"
	ConfigInvalid       = "CONFIG_INVALID"
	LockInvalid         = "LOCK_INVALID"
	ConfigUnavailable   = "CONFIG_UNAVAILABLE"
	IntegrityFailed     = "INTEGRITY_FAILED"
	UpdateFailed        = "UPDATE_FAILED"
	RollbackFailed      = "ROLLBACK_FAILED"
	PolicyDenied        = "POLICY_DENIED"
	NetworkDenied       = "NETWORK_DENIED"
	ExecFailed          = "EXEC_FAILED"
	ExecTimeout         = "EXEC_TIMEOUT"
	SmokeFailed         = "SMOKE_FAILED"
	BundleFailed        = "BUNDLE_FAILED"
	TimingsFailed       = "TIMINGS_FAILED"
	CacheUnreadable     = "CACHE_UNREADABLE"
	RegistryUnavailable = "REGISTRY_UNAVAILABLE"
	BudgetExceeded      = "BUDGET_EXCEEDED"
	TargetNotPushed     = "TARGET_NOT_PUSHED"
)

// The exit codes.
const (
	ExitOK     = 0 // the command did what it was asked
	ExitFailed = 1 // a pipeline, stage or check failed
	ExitUsage  = 2 // a usage or configuration error
)

// Info is one declared code: the exit code an error with it gives, what
// it means and what to do about it.
type Info struct {
	Code    string
	Exit    int
	Meaning string
	Do      string
}

var declared = []Info{
	{UsageInvalid, ExitUsage, "the command line is wrong: an unknown command or flag, a missing or extra argument, flags that exclude each other",
		"read the message and `piship <command> --help`, and run the command again with the arguments it names"},
	{ConfigInvalid, ExitUsage, "a file, a flag value or an input is not valid: a pipeline, a distribution, a release's files, a --from or --expect-root value",
		"fix the file or value the message names (it says which and how) and run the command again"},
	{LockInvalid, ExitUsage, "piship.lock is missing, malformed or stale: the distribution changed since it was written",
		"run `piship lock` in the distribution's directory and commit the new piship.lock"},
	{ConfigUnavailable, ExitFailed, "something piship needs is not there: no installed release of the id, a file or directory that cannot be read, a runtime that is not cached",
		"install the application first, or make the path the message names readable; offline, fetch what it names while online"},
	{IntegrityFailed, ExitFailed, "bytes are not what was signed, locked or recorded: a refused archive, a damaged install, a release that breaks a release rule",
		"do not use the file: fetch the release again from its source, or run `piship repair <id>` for a damaged install"},
	{UpdateFailed, ExitFailed, "an update was refused or could not be fetched: TUF metadata that does not verify, a rollback or freeze attack, no release for the target, an unreadable source",
		"check the source (--from) and the network; a refusal names the check that failed: ask the publisher, do not work around it"},
	{RollbackFailed, ExitFailed, "there is no previous release to roll back to, or it is damaged",
		"install the version you want with `piship install`, or `piship repair <id>` first"},
	{PolicyDenied, ExitFailed, "a policy of the distribution refused something: a dependency source, an install script, an integrity, a vulnerability, a root that is not the pinned one",
		"change what the message names to meet the policy, or change the policy in the distribution (with a reason) if it is wrong"},
	{NetworkDenied, ExitFailed, "a fetch piship will not make: plain http to a remote host, a redirect to another host or too many",
		"serve the source over https (or from localhost), or fetch it yourself and pass the local path"},
	{ExecFailed, ExitFailed, "an exec stage's command failed: a non-zero status, it could not start, or a declared output was not written",
		"read the command's stderr in the message and fix the command or its inputs"},
	{ExecTimeout, ExitFailed, "an exec stage's command ran past its timeout and was stopped",
		"make the command faster, or raise the stage's timeout"},
	{SmokeFailed, ExitFailed, "the smoke test of a built distribution failed: the application did not start or answer as declared",
		"run the built application by hand with the same arguments and fix what it prints"},
	{BundleFailed, ExitFailed, "bundling the application's JavaScript failed (esbuild)",
		"fix the source file and line the message names"},
	{TimingsFailed, ExitFailed, "the timings page could not be written",
		"check that the page's directory exists and is writable"},
	{CacheUnreadable, ExitFailed, "piship's cache (the recorded runs of `piship explain`) cannot be read",
		"check the cache directory's permissions, or remove it: it is rebuilt by the next run"},
	{RegistryUnavailable, ExitFailed, "an OCI registry (--remote-cache, --to, a release's targets) could not be reached, refused the credentials, or ran past its time budget (5 s to connect; a cache 30 s a request and 60 s a run, a release's transfer 10 and 30 minutes)",
		"check the registry's address and that it is up; log in with `docker login` or `oras login` (piship reads the Docker config file and its credential helpers); a cache read goes on without it"},
	{BudgetExceeded, ExitFailed, "a release's counted figure (payload files, installed files, archive bytes) is more than 10% over the distribution's budgets.hcl",
		"shrink what the message names back under its budget, or accept the growth with `piship budgets check --record` and commit budgets.hcl with the reason"},
	{TargetNotPushed, ExitFailed, "piship release --merge found no release in the registry for a target the distribution declares: that target's runner has not pushed it (yet)",
		"run `piship release DIST --target <target> --to oci://...` on the runner of each target the message names (the same commit, version and registry), then run the merge again"},
}

// All returns every declared code, in the order of docs/errors.md.
func All() []Info { return append([]Info(nil), declared...) }

// Lookup returns the declaration of code.
func Lookup(code string) (Info, bool) {
	for _, i := range declared {
		if i.Code == code {
			return i, true
		}
	}
	return Info{}, false
}

// Coder is an error that carries a code. Every error type of piship with a
// code implements it; its Error() starts with "CODE: ".
type Coder interface {
	error
	ErrorCode() string
}

// Of returns the code of the outermost Coder in err's chain, or "".
func Of(err error) string {
	var c Coder
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	return ""
}

// IsUsage reports whether code is a usage or configuration error: the
// codes piship exits ExitUsage for, whichever command or stage found them.
func IsUsage(code string) bool {
	i, ok := Lookup(code)
	return ok && i.Exit == ExitUsage
}

// Exit is the exit code of err: ExitOK for nil, ExitUsage for an error
// whose code (Of) is a usage code, ExitFailed for anything else.
func Exit(err error) int {
	if err == nil {
		return ExitOK
	}
	if IsUsage(Of(err)) {
		return ExitUsage
	}
	return ExitFailed
}

// Error is a failure with a code. Error() is "CODE: message".
type Error struct {
	Code string
	Msg  string
	Err  error // the cause, if any (also in Msg)
}

func (e *Error) Error() string { return e.Code + ": " + e.Msg }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrorCode returns the code.
func (e *Error) ErrorCode() string { return e.Code }

var _ Coder = (*Error)(nil)

// New returns an *Error with the code and the message.
func New(code, msg string) *Error { return &Error{Code: code, Msg: msg} }

// Errorf returns an *Error with the code and a message formatted like
// fmt.Errorf (a %w verb is unwrapped by errors.Is and errors.As). A coded
// error the message starts with (one error passed on with another code)
// does not print its code after the new one, and an error in an argument's
// chain with the same code says it once ("x.tar.gz: INTEGRITY_FAILED:
// archive refused ..." under INTEGRITY_FAILED reads "x.tar.gz: archive
// refused ..."): a different inner code stays, it tells what the outer
// one was caused by.
func Errorf(code, format string, args ...any) *Error {
	werr := fmt.Errorf(format, args...)
	msg := werr.Error()
	same := false
	for _, a := range args {
		err, ok := a.(error)
		if !ok {
			continue
		}
		var c Coder
		if errors.As(err, &c) {
			if p := c.ErrorCode() + ": "; strings.HasPrefix(msg, p) && strings.HasPrefix(msg, c.Error()) {
				msg = msg[len(p):]
			}
		}
		if hasCode(err, code) {
			same = true
		}
	}
	if same {
		msg = strings.ReplaceAll(msg, ": "+code+": ", ": ")
	}
	return &Error{Code: code, Msg: msg, Err: errors.Unwrap(werr)}
}

// hasCode reports whether a Coder with code is in err's chain (through
// Unwrap() error and Unwrap() []error).
func hasCode(err error, code string) bool {
	for err != nil {
		if c, ok := err.(Coder); ok && c.ErrorCode() == code {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if hasCode(e, code) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// Newf returns an *Error with the code and a message formatted exactly
// like fmt.Errorf (a %w verb is unwrapped by errors.Is and errors.As),
// without Errorf's rules: its text is the code, ": " and what
// fmt.Errorf(format, args...) prints, the code now a value.
func Newf(code, format string, args ...any) *Error {
	werr := fmt.Errorf(format, args...)
	return &Error{Code: code, Msg: werr.Error(), Err: errors.Unwrap(werr)}
}
