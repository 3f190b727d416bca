package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/internal/flagvalue"
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/serve"
	"github.com/memscope/memscope/trace"
)

// serveOptions are the flags of 'memscope serve'.
type serveOptions struct {
	http, trace, run string
	device           int
	focus, ignore    string
}

// serveContext is the context serve runs under: until SIGINT or SIGTERM.
// Tests replace it, and serveListening, to drive the server.
var serveContext = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// serveListening is called with the URL once the server listens.
var serveListening = func(url string) {}

func serveFlags(fs *pflag.FlagSet) runFunc {
	var o serveOptions
	fs.StringVar(&o.http, "http", "localhost:0", "listen on `HOST:PORT` (port 0: a free one); an address other than loopback needs the token printed in the URL")
	fs.StringVar(&o.trace, "trace", "", "join with the torch.profiler `TRACE` of the same run: the peak by operator in the summary")
	fs.StringVar(&o.run, "run", "", "serve the snapshots of the capture run directory `DIR` (and its trace.json.gz)")
	flagvalue.Device(fs, &o.device, "serve only CUDA device `N`; -1 for every device")
	filterFlags(fs, &o.focus, &o.ignore)
	memoryFlag(fs)
	return func(cc *cmdContext, paths []string) error {
		if _, _, err := net.SplitHostPort(o.http); err != nil {
			return usageErrorf("--http %q: want HOST:PORT, such as localhost:8080 or localhost:0", o.http)
		}
		if o.run != "" {
			paths = append(paths, o.run)
			if o.trace == "" {
				o.trace = capture.RunTrace(o.run)
			}
		}
		if len(paths) == 0 {
			return usageErrorf("missing SNAP argument: give snapshots, or a capture run directory with --run")
		}
		return runServe(cc, o, paths)
	}
}

func runServe(cc *cmdContext, o serveOptions, paths []string) error {
	filter, paths, err := filteredPaths(o.ignore, o.focus, paths)
	if err != nil {
		return err
	}
	var prof trace.Profile
	if o.trace != "" {
		if prof, err = openProfile(cc, o.trace); err != nil {
			return badInput(err)
		}
	}
	progress := report.ServeProgress{W: cc.stderr}
	srv, err := serve.Load(paths, serve.LoadOptions{
		Options:  serve.Options{Version: version(), Trace: cc.shown(o.trace)},
		Profile:  prof,
		Progress: progress,
		Analyze: func(p string) (*attribution.Analysis, error) {
			return analyzeSnapshot(cc, p, attribution.Options{Filter: filter, Device: o.device, AllocSizes: true, SeriesPoints: serve.OverviewPoints})
		},
	})
	if err != nil {
		return badInput(err)
	}
	ctx, stop := serveContext()
	defer stop()
	err = serve.Run(ctx, srv, o.http, func(url, base string, token bool) {
		// The URL, with its token when the address is not loopback, is
		// printed once, on stdout; the progress line names the address only.
		fmt.Fprintln(cc.stdout, url)
		progress.Listening(base, token)
		serveListening(url)
	})
	if le := (*serve.ListenError)(nil); errors.As(err, &le) {
		return usageErrorf("--http %s: %v", o.http, le.Err)
	}
	return err
}
