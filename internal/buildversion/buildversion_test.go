package buildversion

import (
	"runtime/debug"
	"testing"
)

func TestOf(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, tt := range []struct {
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{nil, false, "devel"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}}, true, "v0.3.1"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "devel"},
		{&debug.BuildInfo{Main: debug.Module{Version: ""}}, true, "devel"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("vcs.revision", "0123456789abcdef0123", "vcs.modified", "false")}, true, "devel (0123456789ab)"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("vcs.revision", "0123456789abcdef0123", "vcs.modified", "true")}, true, "devel (0123456789ab, modified)"},
	} {
		if got := Of(tt.bi, tt.ok); got != tt.want {
			t.Errorf("Of(%+v, %v) = %q, want %q", tt.bi, tt.ok, got, tt.want)
		}
	}
}

func TestString(t *testing.T) {
	if got := String("0.1.0"); got != "0.1.0" {
		t.Errorf("String(\"0.1.0\") = %q, want the version set", got)
	}
	if got, want := String(""), Of(debug.ReadBuildInfo()); got != want {
		t.Errorf("String(\"\") = %q, want the build's %q", got, want)
	}
}
