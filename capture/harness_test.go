package capture

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/memscope/memscope/internal/testenv"
)

// TestHarnessPython runs the harness's torch-free unit tests with python3.
func TestHarnessPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.Need(t, "python3 not found: the harness's torch-free tests need it")
	}
	cmd := exec.Command(py, "-m", "unittest", "-v", "harness_test.py")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1") // no __pycache__ in the tree
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("python3 -m unittest harness_test.py: %v\n%s", err, out.String())
	}
	t.Log(out.String())
}

func TestHarnessEmbedded(t *testing.T) {
	if !bytes.Contains(Harness, []byte("def main(argv)")) {
		t.Fatal("embedded harness.py has no main(argv)")
	}
}
