package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file holds a base backup, made by a backup's process (dumpshim.go)
// for MethodBase: pg_basebackup of the whole server into a directory
// renamed into place once complete, then a restore point recorded with a
// checksum of the spec's database taken at that very point, then the WAL
// up to it archived. The restore drill (drill.go) then proves it.

// BaseResult is what a base backup recorded and its drill measured.
type BaseResult struct {
	// StartWAL is the first WAL segment a restore from it needs.
	StartWAL string `json:"startWAL,omitempty"`
	// RestorePoint is the named restore point recorded after it (its name
	// is the attempt's ID), at RestorePointLSN and RestorePointTime: the
	// instant its drill restores to.
	RestorePoint     string    `json:"restorePoint,omitempty"`
	RestorePointLSN  string    `json:"restorePointLSN,omitempty"`
	RestorePointTime time.Time `json:"restorePointTime,omitzero"`
	// Rows and Checksum are the spec's database's, at the restore point:
	// its tables' row count and a checksum of their rows.
	Rows     int64  `json:"rows"`
	Checksum string `json:"checksum,omitempty"`
	// Verified: the drill restored it into a scratch cluster, which
	// reached the restore point, answered from its catalog and held the
	// database with the same rows and checksum. RestoreMillis is how long
	// that took, from the first file copied to the checksum compared.
	Verified      bool  `json:"verified,omitempty"`
	RestoreMillis int64 `json:"restoreMillis,omitempty"`
}

// VerifiedRestore is a backup whose drill succeeded, as a schedule's
// status and the operator's /backups show it.
type VerifiedRestore struct {
	Backup        string    `json:"backup"`
	RestorePoint  time.Time `json:"restorePoint"`
	RestoreMillis int64     `json:"restoreMillis"`
}

// baseDir is where attempt id's base backup is kept, under the backups'
// directory: a name made by the operator, never read from a status.
func baseDir(dir, id string) string { return filepath.Join(dir, ".base", id) }

// takeBaseBackup makes attempt id's base backup into baseDir(dir, id),
// records its restore point with database's checksum, and waits for the
// WAL up to it to be archived. It returns the backup's size.
func takeBaseBackup(ctx context.Context, id, database, dir, bin string, archive *walArchive) (BaseResult, int64, error) {
	final := baseDir(dir, id)
	tmp := filepath.Join(dir, ".base", "."+id+".tmp")
	if err := os.RemoveAll(tmp); err != nil {
		return BaseResult{}, 0, err
	}
	if err := os.MkdirAll(filepath.Dir(tmp), 0o700); err != nil {
		return BaseResult{}, 0, err
	}
	// -X none: the WAL comes from the archive, which pg_basebackup waits
	// for; a restore from this backup therefore proves the archive too.
	err := runTool(ctx, filepath.Join(bin, "pg_basebackup"), id, "-D", tmp, "-Fp", "-X", "none", "-c", "fast", "--no-password", "-l", id)
	if err != nil {
		return BaseResult{}, 0, err
	}
	start, err := readStartWAL(tmp)
	if err != nil {
		return BaseResult{}, 0, err
	}
	if err := os.Rename(tmp, final); err != nil {
		return BaseResult{}, 0, err
	}
	res := BaseResult{StartWAL: start, RestorePoint: id}
	if err := recordRestorePoint(ctx, &res, database, archive); err != nil {
		return res, 0, err
	}
	size, err := treeSize(final)
	return res, size, err
}

// readStartWAL reads the first WAL segment a base backup needs from its
// backup_label.
func readStartWAL(dir string) (string, error) {
	f, err := os.Open(filepath.Join(dir, "backup_label"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// START WAL LOCATION: 0/2000028 (file 000000010000000000000002)
		if rest, ok := strings.CutPrefix(sc.Text(), "START WAL LOCATION: "); ok {
			_, file, _ := strings.Cut(rest, "(file ")
			seg := strings.TrimSuffix(file, ")")
			return seg, checkSegment(seg)
		}
	}
	return "", errors.New("backup_label names no START WAL LOCATION")
}

// recordRestorePoint takes a SHARE lock on database's tables (writers
// wait, readers do not), checksums them, creates the restore point named
// res.RestorePoint and commits: the restore point's state is the one
// checksummed. Then it waits for the WAL up to it to be archived.
func recordRestorePoint(ctx context.Context, res *BaseResult, database string, archive *walArchive) error {
	conn, err := connectEnv(ctx, database, 0)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		tables, err := userTables(ctx, tx)
		if err != nil {
			return err
		}
		if len(tables) > 0 {
			if _, err := tx.Exec(ctx, "LOCK TABLE "+strings.Join(tables, ", ")+" IN SHARE MODE"); err != nil {
				return err
			}
		}
		if res.Rows, res.Checksum, err = checksum(ctx, tx, tables); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "SELECT pg_create_restore_point($1)::text, clock_timestamp()", res.RestorePoint).
			Scan(&res.RestorePointLSN, &res.RestorePointTime)
	})
	if err != nil {
		return fmt.Errorf("recording the restore point: %w", err)
	}
	res.RestorePointTime = res.RestorePointTime.UTC()
	return archive.switchAndWait(ctx, conn, 5*time.Minute)
}

// querier is a connection or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// userTables lists the database's tables outside the system's schemas,
// each quoted as an identifier, in order.
func userTables(ctx context.Context, q querier) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_%'
		ORDER BY 1, 2`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (string, error) {
		var schema, name string
		err := row.Scan(&schema, &name)
		return pgx.Identifier{schema, name}.Sanitize(), err
	})
}

// checksum counts the rows of tables and sums a hash of each row, per
// table; it returns the total rows and a digest of every table's name,
// count and sum, which a restore of the same state reproduces exactly.
func checksum(ctx context.Context, q querier, tables []string) (int64, string, error) {
	h := sha256.New()
	var total int64
	for _, t := range tables {
		var n int64
		var sum string
		err := q.QueryRow(ctx, `SELECT count(*), coalesce(sum(('x' || substr(md5(r::text), 1, 15))::bit(60)::bigint::numeric), 0)::text FROM `+t+` AS r`).Scan(&n, &sum)
		if err != nil {
			return 0, "", fmt.Errorf("checksum of %s: %w", t, err)
		}
		total += n
		fmt.Fprintf(h, "%s\t%d\t%s\n", t, n, sum)
	}
	return total, hex.EncodeToString(h.Sum(nil)), nil
}

// connectEnv connects by the libpq environment (PGHOST, PGUSER,
// PGPASSWORD, ...) to database; to 127.0.0.1:port instead if port is not 0.
func connectEnv(ctx context.Context, database string, port int) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cfg.Database = database
	if port != 0 {
		cfg.Host, cfg.Port = "127.0.0.1", uint16(port)
		cfg.Fallbacks = nil
	}
	cfg.ConnectTimeout = 5 * time.Second
	return pgx.ConnectConfig(ctx, cfg)
}

// treeSize is the size of the regular files under dir.
func treeSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	return n, err
}
