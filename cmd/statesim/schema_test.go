package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestSchemaCommand(t *testing.T) {
	for _, format := range []string{"scenario", "sweep"} {
		code, out, errs := runCLI("schema", format)
		var v map[string]any
		if code != exitClean || json.Unmarshal([]byte(out), &v) != nil || v["additionalProperties"] != false {
			t.Errorf("schema %s: exit %d\n%s%s", format, code, out, errs)
		}
	}
	dir := t.TempDir()
	if code, _, errs := runCLI("schema", "--out", dir); code != exitClean {
		t.Fatalf("--out: exit %d: %s", code, errs)
	}
	for _, f := range []string{"scenario.schema.json", "sweep.schema.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if code, _, _ := runCLI("schema", "trace"); code != exitBadInput {
		t.Errorf("schema trace: exit %d, want 2", code)
	}
}
