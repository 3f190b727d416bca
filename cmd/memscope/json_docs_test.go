package main

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/memscope/memscope/report"
)

// jsonDocs is docs/json.md, cut into its sections by "## " headings.
type jsonDocs struct {
	sections map[string]string // the heading's first `word` → heading and body
}

func readJSONDocs(t *testing.T) jsonDocs {
	t.Helper()
	b, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	d := jsonDocs{sections: map[string]string{}}
	parts := strings.Split(string(b), "\n## ")
	d.sections["preamble"] = parts[0]
	for _, part := range parts[1:] {
		head, _, _ := strings.Cut(part, "\n")
		key := strings.Fields(head)[0]
		d.sections[strings.Trim(key, "`")] = part
	}
	return d
}

var docWordRE = regexp.MustCompile(`[a-z][a-z0-9_]*`)

// names returns the names a section documents: the words in its
// backquoted and double-quoted spans and its schema blocks, with those of
// the preamble, the shared parts and the sections it refers to by their
// backquoted name (an OOM's `fragmentation` is "as in `frag`").
func (d jsonDocs) names(t *testing.T, kind string) map[string]bool {
	t.Helper()
	sec, ok := d.sections[kind]
	if !ok {
		t.Fatalf("docs/json.md has no section for %q", kind)
	}
	texts := []string{sec, d.sections["preamble"], d.sections["Shared"]}
	for _, m := range regexp.MustCompile("`([a-z]+)`").FindAllStringSubmatch(sec, -1) {
		if other, ok := d.sections[m[1]]; ok && m[1] != kind {
			texts = append(texts, other)
		}
	}
	out := map[string]bool{}
	for _, text := range texts {
		for _, span := range regexp.MustCompile("`[^`]*`|\"[^\"]*\"").FindAllString(text, -1) {
			for _, w := range docWordRE.FindAllString(span, -1) {
				out[w] = true
			}
		}
		// The schema blocks quote names one by one and list them bare.
		for _, block := range regexp.MustCompile("(?s)```.*?```").FindAllString(text, -1) {
			for _, w := range docWordRE.FindAllString(block, -1) {
				out[w] = true
			}
		}
	}
	return out
}

// goTypes returns the report types a section's heading names.
func (d jsonDocs) goTypes(kind string) []string {
	head, _, _ := strings.Cut(d.sections[kind], "\n")
	var out []string
	for _, m := range regexp.MustCompile(`report\.([A-Z]\w*)`).FindAllStringSubmatch(head, -1) {
		out = append(out, m[1])
	}
	return out
}

// dataKeyed are the fields whose object keys are data (category names,
// metric names), not field names.
var dataKeyed = map[string]bool{"categories": true, "category_blocks": true, "categories_at_peak": true, "max": true, "at_end": true, "phase_peaks": true}

// jsonKeys collects the object keys of a decoded document, with the path
// of the first place each was seen.
func jsonKeys(v any, path string, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if _, ok := out[k]; !ok {
				out[k] = path + "." + k
			}
			if !dataKeyed[k] {
				jsonKeys(e, path+"."+k, out)
			}
		}
	case []any:
		for _, e := range x {
			jsonKeys(e, path+"[]", out)
		}
	}
}

// TestJSONDocsDescribeOutput: every field each command writes in JSON is
// described in its section of docs/json.md, and so is every field of the Go
// types the section's heading names — the document cannot drift from the
// output or from the types.
func TestJSONDocsDescribeOutput(t *testing.T) {
	docs := readJSONDocs(t)
	const (
		profiled = "../../fixtures/llama-profiled/"
		// graphSnap holds a CUDA graph's private pool and a MemPool.
		graphSnap = "../../fixtures/workloads/cuda-graph/snapshot.pickle"
	)
	runs := map[string][][]string{
		"summary": {{"summary", llamaSnap, oomSnap, graphSnap}, {"summary", "--trace", profiled + "trace.json.gz", profiled + "snapshot.pickle"}},
		"peak":    {{"peak", mlpSnap, oomSnap}, {"peak", "--trace", profiled + "trace.json.gz", profiled + "snapshot.pickle"}},
		"leaks":   {{"leaks", leakSnap, mlpSnap}},
		"frag":    {{"frag", oomSnap, leakSnap, graphSnap}, {"frag", "--simulate", "../../fixtures/whatif-varlen/default/snapshot.pickle"}},
		"oom":     {{"oom", oomSnap}},
		"diff":    {{"diff", mlpSnap, leakSnap}},
		"check":   {{"check", "--max-peak", "1GiB", oomSnap, mlpSnap}},
		"ops":     {{"ops", profiled + "trace.json.gz"}, {"ops", "--by", "module", profiled + "trace.json.gz"}},
		"advise":  {{"advise", "--device-memory", "H100", adviseTrain, adviseInfer}, {"advise", "--device-memory", "1.85GiB", adviseTrain}},
		"whatif":  {{"whatif", "--conf", "expandable_segments:True", oomSnap}, {"whatif", "../../fixtures/advise/infer-static/snapshot.pickle"}},
		"fit": {{"fit", "--memory-limit", "8GiB", "--conf", "expandable_segments:True", "../../fixtures/fit-conv/b2/snapshot.pickle.gz",
			"../../fixtures/fit-conv/b4/snapshot.pickle.gz", "../../fixtures/fit-conv/b8/snapshot.pickle.gz",
			"--compare", "../../fixtures/fit-conv/recorded-b45/snapshot.pickle.gz@45"}},
	}
	kinds := make([]string, 0, len(runs))
	for k := range runs {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			names := docs.names(t, kind)
			for _, args := range runs[kind] {
				full := append([]string{args[0], "--json"}, args[1:]...)
				r := runMemscope(full...)
				if r.code > 1 {
					t.Fatalf("memscope %v: exit %d: %v", full, r.code, r.err)
				}
				var v any
				if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
					t.Fatalf("memscope %v: %v", full, err)
				}
				keys := map[string]string{}
				jsonKeys(v, "", keys)
				for k, where := range keys {
					if !names[k] {
						t.Errorf("memscope %v writes %s, which docs/json.md's %s section does not describe", full, where, kind)
					}
				}
			}
			types := docs.goTypes(kind)
			if len(types) == 0 {
				t.Fatalf("the %s section's heading names no report type", kind)
			}
			for _, name := range types {
				typ := reportTypes[name]
				if typ == nil {
					t.Errorf("the %s section names report.%s, which this test does not know (add it to reportTypes) or report lacks", kind, name)
					continue
				}
				for _, tag := range jsonTags(typ, map[reflect.Type]bool{}) {
					if !names[tag] {
						t.Errorf("report.%s has the JSON field %q, which docs/json.md's %s section does not describe", name, tag, kind)
					}
				}
			}
		})
	}
}

// reportTypes are the types docs/json.md's headings may name.
var reportTypes = map[string]reflect.Type{}

func init() {
	for _, v := range []any{
		report.SummaryDoc{}, report.SummaryFile{}, report.SummaryDevice{}, report.PeakJSON{}, report.RangeJSON{},
		report.FindingJSON{}, report.SiteJSON{}, report.FrameJSON{}, report.OpBytesJSON{}, report.TimelineSampleJSON{},
		report.Numbers{}, report.PeakFileJSON{}, report.PeakDeviceJSON{}, report.MomentJSON{}, report.StreamJSON{}, report.LeaksFileJSON{},
		report.StepTableJSON{}, report.StepRowJSON{}, report.PrivatePoolJSON{},
		report.LeakJSON{}, report.LeakSiteJSON{}, report.FragFileJSON{}, report.DeviceFragJSON{}, report.FragJSON{},
		report.OOMFileJSON{}, report.OOMJSON{}, report.RequestSiteJSON{}, report.CapJSON{}, report.OOMSettingJSON{}, report.DiffResultJSON{},
		report.DeviceDiffJSON{}, report.CheckResultJSON{}, report.CheckFileJSON{}, report.OpsFileJSON{},
		report.OpsJSON{}, report.OpRowJSON{}, report.ModuleTypeJSON{}, report.TimelineJSON{}, report.TimelinePeakJSON{}, report.TimelineCurveJSON{},
		report.AdviceFileJSON{}, report.AdviceInferenceJSON{}, report.AdviceSettingJSON{}, report.AdviceJSON{}, report.AdviceHolderJSON{}, report.AdviceFixJSON{}, report.AdviceCombinationJSON{}, report.BudgetFitJSON{}, report.AdviceOOMJSON{}, report.LimitJSON{}, report.LimitFitJSON{},
		report.WhatIfFileJSON{}, report.WhatIfDeviceJSON{}, report.WhatIfReplayJSON{}, report.WhatIfRunJSON{},
		report.FitJSON{}, report.FitFrontierJSON{}, report.FitPointJSON{}, report.FitOOMJSON{}, report.FitCurveJSON{}, report.FitKindsJSON{}, report.FitGroupJSON{}, report.FitInputJSON{}, report.FitCompareJSON{}, report.FitSizeMissJSON{}, report.FitFixJSON{},
	} {
		t := reflect.TypeOf(v)
		reportTypes[t.Name()] = t
	}
	reportTypes["SummaryDoc"] = reflect.TypeOf(report.SummaryDoc{})
	reportTypes["FilesDoc"] = reflect.TypeOf(report.FilesDoc[any]{})
	reportTypes["ResultDoc"] = reflect.TypeOf(report.ResultDoc[any]{})
}

// jsonTags lists the JSON names of t's fields and of the structs it holds.
func jsonTags(t reflect.Type, seen map[reflect.Type]bool) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return nil
	}
	seen[t] = true
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			out = append(out, jsonTags(f.Type, seen)...)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, name)
		out = append(out, jsonTags(f.Type, seen)...)
	}
	return out
}
