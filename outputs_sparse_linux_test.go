package svc_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/svc-sandbox/svc"
)

// TestOutputsSparse: sparse files are stored as the bytes they read as,
// and the outputs of one request together cost the store at most the
// workspace size; the rest are store_full, unread.
func TestOutputsSparse(t *testing.T) {
	const ws = 128 << 20
	sb, fs := outputsSandbox(t, svc.Config{WorkspaceSize: ws}, svc.FileStoreConfig{})
	const size, n = 50 << 20, 6
	// Each file is size bytes, all a hole but its last byte, its index.
	task := svc.Task{Cmd: "python3", Args: []string{"-c", fmt.Sprintf(`
for i in range(%d):
    with open("f%%d" %% i, "wb") as f:
        f.seek(%d - 1)
        f.write(bytes([i]))
`, n, size)}}
	for i := range n {
		task.Outputs = append(task.Outputs, fmt.Sprintf("f%d", i))
	}
	_, before := fs.Usage()
	var r svc.Result
	u := measure(t, func() { r = one(t, sb, task) })
	_, after := fs.Usage()
	t.Logf("%d sparse files of %d MiB: the store grew by %d bytes; %v", n, size>>20, after-before, u)
	expect(t, r, svc.OutcomeExited, 0)
	if after-before > ws {
		t.Errorf("the store grew by %d bytes, over the workspace size %d", after-before, ws)
	}
	fits := ws / size
	for i := range n {
		p := fmt.Sprintf("f%d", i)
		o := r.Outputs[p]
		if i >= fits {
			wantOutputError(t, r, p, svc.OutputStoreFull)
			continue
		}
		h := sha256.New()
		h.Write(make([]byte, size-1))
		h.Write([]byte{byte(i)})
		if want := hex.EncodeToString(h.Sum(nil)); o.FileID != want || o.Size != size {
			t.Errorf("output %s: %+v, want id %s and %d bytes", p, o, want, size)
		}
	}
}
