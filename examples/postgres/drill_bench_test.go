package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/converge-go/converge/examples/postgres/internal/cluster"
)

// BenchmarkRestoreDrill measures a restore drill (copy of the base
// backup, recovery from the WAL archive to its restore point, checksum of
// the database, teardown) per GB of the example's data: a table of
// integers and md5 texts grown to POSTGRES_DRILL_MB megabytes (default
// 256). It reports the drill's seconds per GB of base backup.
//
//	cd examples && POSTGRES_DRILL_MB=1024 go test -run '^$' -bench BenchmarkRestoreDrill -benchtime 1x ./postgres/
func BenchmarkRestoreDrill(b *testing.B) {
	mb := 256
	if s := os.Getenv("POSTGRES_DRILL_MB"); s != "" {
		var err error
		if mb, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{Settings: []string{"archive_mode=on"}})
	if err != nil {
		b.Skipf("skipping: no PostgreSQL to measure: %v", err)
	}
	defer c.Remove()
	for _, kv := range c.Env() {
		k, v, _ := strings.Cut(kv, "=")
		b.Setenv(k, v)
	}
	cred, err := cluster.Credential("")
	must(b, err)
	archiveDir, restores := filepath.Join(c.Dir(), "archive"), filepath.Join(c.Dir(), "restores")
	must(b, os.Mkdir(archiveDir, 0o700))
	must(b, chown(archiveDir, cred))
	must(b, makeRestoreDir(restores, ""))
	archive, err := newWALArchive(archiveDir)
	must(b, err)
	conn, err := connectEnv(ctx, "postgres", 0)
	must(b, err)
	defer conn.Close(ctx)
	must(b, archive.ensure(ctx, conn))
	_, err = c.Psql(ctx, "postgres", "CREATE DATABASE app")
	must(b, err)
	rows := mb * 1 << 20 / 80 // about 80 bytes a row on disk
	_, err = c.Psql(ctx, "app", fmt.Sprintf("CREATE TABLE t AS SELECT g AS n, md5(g::text) AS s FROM generate_series(1, %d) g", rows))
	must(b, err)
	var perGB, bytes float64
	b.ResetTimer()
	for i := range b.N {
		dir, id := b.TempDir(), fmt.Sprintf("bench-%d", i)
		res, size, err := takeBaseBackup(ctx, id, "app", dir, c.BinDir(), archive)
		must(b, err)
		must(b, drill(ctx, baseDir(dir, id), filepath.Join(restores, ".drills", id), c.BinDir(), "app", archive, cred, &res))
		bytes = float64(size)
		perGB += float64(res.RestoreMillis) / 1000 / (bytes / (1 << 30))
	}
	b.ReportMetric(perGB/float64(b.N), "drill-s/GB")
	b.ReportMetric(bytes/(1<<20), "backup-MB")
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
