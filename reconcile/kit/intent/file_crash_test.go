package intent_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/intent"
)

// fileWriterEnv names the file the file writer writes; it marks the test
// binary as the file crash test's child (see TestMain).
const fileWriterEnv = "INTENT_FILE_WRITER"

// version returns version v of the file: a header saying its version, its
// length and the SHA-256 of the rest, then 256 KiB to 2.25 MiB drawn from v.
func version(v int) []byte {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(v))
	src := rand.NewChaCha8(seed)
	body := make([]byte, 256<<10+int(src.Uint64()%(2<<20)))
	_, _ = src.Read(body)
	sum := sha256.Sum256(body)
	return append(fmt.Appendf(nil, "v=%d len=%d sum=%x\n", v, len(body), sum), body...)
}

// readVersion reads the file at path: its version, or an error if it is
// not a whole version.
func readVersion(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	header, body, ok := bytes.Cut(b, []byte("\n"))
	if !ok {
		return 0, fmt.Errorf("no header in %d bytes", len(b))
	}
	var v, n int
	var sum string
	if _, err := fmt.Sscanf(string(header), "v=%d len=%d sum=%s", &v, &n, &sum); err != nil {
		return 0, fmt.Errorf("header %q: %w", header, err)
	}
	if len(body) != n || fmt.Sprintf("%x", sha256.Sum256(body)) != sum {
		return 0, fmt.Errorf("version %d: %d bytes of %d, or damaged", v, len(body), n)
	}
	return v, nil
}

// fileWriter is the file crash test's child: it writes versions of the
// file at path, one after another from the one after the path's, the odd ones with WriteFile and the
// even ones through a File in chunks, printing each version once it is
// committed, until it is killed.
func fileWriter(path string) int {
	first, err := readVersion(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintln(os.Stderr, "file writer:", err)
		return 2
	}
	data := version(first + 1)
	for v := first + 1; ; v++ {
		var err error
		if v%2 == 1 {
			err = intent.WriteFile(path, data, 0o600)
		} else {
			err = writeInChunks(path, data)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "file writer:", err)
			return 2
		}
		// The next version is made before this one is announced, so that
		// a kill that follows the announcement lands in the next write.
		data = version(v + 1)
		say("committed", v)
	}
}

func writeInChunks(path string, data []byte) error {
	f, err := intent.CreateFile(path, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	for len(data) > 0 {
		n := min(len(data), 64<<10)
		if _, err := f.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return f.Commit()
}

// TestSIGKILLedWriterLeavesThePathAbsentOrWholeNeverPartial kills a child
// process (this test binary) writing version after version of a file of
// up to 2.25 MiB, with SIGKILL, after a random number of versions committed,
// over many cycles. After each kill the path is absent (before any
// commit) or holds a whole version, at least the last one the child said
// it committed; never part of one. RemoveLeftovers then removes the
// temporary files the kills left, and the kills must have left some (they
// landed in the middle of writes).
func TestSIGKILLedWriterLeavesThePathAbsentOrWholeNeverPartial(t *testing.T) {
	cycles := 40
	if testing.Short() {
		cycles = 8
	}
	if v := os.Getenv(crashCyclesEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		cycles = n
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "dump")
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 13))
	committed, leftovers := 0, 0
	for cycle := range cycles {
		got := runFileWriter(t, path, rng.IntN(4))
		committed = max(committed, got)
		v, err := readVersion(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			require.Zero(t, committed, "cycle %d: the path is gone after version %d was committed", cycle, committed)
		case err != nil:
			t.Fatalf("cycle %d: a partial file at the path: %v", cycle, err)
		default:
			require.GreaterOrEqual(t, v, committed, "cycle %d: a committed version was lost", cycle)
		}
		names, err := filepath.Glob(filepath.Join(dir, ".dump.*.tmp"))
		require.NoError(t, err)
		leftovers += len(names)
		require.NoError(t, intent.RemoveLeftovers(path))
		names, err = filepath.Glob(filepath.Join(dir, ".dump.*.tmp"))
		require.NoError(t, err)
		require.Empty(t, names)
	}
	t.Logf("%d cycles, up to version %d committed, %d temporary files left by kills", cycles, committed, leftovers)
	require.Positive(t, leftovers, "no kill landed in the middle of a write: the test proved nothing")
}

// runFileWriter runs the file writer and SIGKILLs it once it has said it
// committed killAfter versions (0: at once), returning the last version it
// said it committed.
func runFileWriter(t *testing.T, path string, killAfter int) int {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fileWriterEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	if killAfter == 0 {
		require.NoError(t, cmd.Process.Kill())
	}
	last, n := 0, 0
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadString('\n')
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		v, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSuffix(line, "\n"), "committed "))
		require.NoError(t, err, line)
		last, n = v, n+1
		if n == killAfter {
			require.NoError(t, cmd.Process.Kill())
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the writer ended by itself")
	return last
}
