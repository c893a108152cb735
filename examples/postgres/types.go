package main

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/intent"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// The operator's kinds, each a resource.Resource kept under its prefix in
// a store served with the API-server layer: the spec is the user's, the
// status the operator's (with its observed generation and conditions).
type (
	Role           = resource.Resource[RoleSpec, RoleStatus]
	Database       = resource.Resource[DatabaseSpec, DatabaseStatus]
	BackupSchedule = resource.Resource[BackupScheduleSpec, BackupScheduleStatus]
	Backup         = resource.Resource[BackupSpec, BackupStatus]
)

// The key prefixes of the kinds: a Role "roles/app" is the PostgreSQL role
// app, a Database "databases/app" the database app.
const (
	RolePrefix     = "roles/"
	DatabasePrefix = "databases/"
	SchedulePrefix = "backupschedules/"
	BackupPrefix   = "backups/"
)

// Finalizers: each kind that made something in the world carries one
// until its cleanup is done, so that a deletion made while the operator is
// down is carried out when it starts again.
const (
	RoleFinalizer     = "postgres.converge.dev/role"
	DatabaseFinalizer = "postgres.converge.dev/database"
	BackupFinalizer   = "postgres.converge.dev/dump-file"
)

// ConditionReady is the condition every kind reports: True once the world
// is as the spec says (for a Backup: its dump succeeded), False with the
// reason and the error otherwise.
const ConditionReady = "Ready"

// RoleSpec is a PostgreSQL role as the user wants it, reconciled against
// pg_authid and pg_auth_members.
type RoleSpec struct {
	// Login lets the role log in.
	Login bool `json:"login,omitempty"`
	// ConnectionLimit bounds the role's concurrent connections; nil is no
	// limit (-1).
	ConnectionLimit *int `json:"connectionLimit,omitempty"`
	// InRoles are the roles it is a member of, exactly: the operator
	// grants the missing memberships and revokes the others.
	InRoles []string `json:"inRoles,omitempty"`
}

// RoleStatus is the role as the operator last saw it in the catalog.
type RoleStatus struct {
	Exists          bool     `json:"exists,omitempty"`
	Login           bool     `json:"login,omitempty"`
	ConnectionLimit int      `json:"connectionLimit,omitempty"`
	InRoles         []string `json:"inRoles,omitempty"`
	// Created: the operator made the role from this store (its mark is
	// on it), so deleting the Role drops it; a role that existed before
	// is managed but never dropped.
	Created bool `json:"created,omitempty"`
	// External is reconcile/kit/external's record of the role: its name
	// and a create in progress (the latest error is in the condition
	// Synced).
	External external.Record `json:"external"`
}

// Reclaim says what deleting a Database does to the database.
type Reclaim string

const (
	// Retain keeps the database and releases it: its mark is removed, so
	// that no operator drops it later. The default.
	Retain Reclaim = "retain"
	// Delete drops the database, if this operator created it from this
	// store (its mark says so); one that existed before is released.
	Delete Reclaim = "delete"
)

// DatabaseSpec is a PostgreSQL database as the user wants it.
type DatabaseSpec struct {
	// Owner is the role that owns it (default: the operator's own role).
	Owner string `json:"owner,omitempty"`
	// Extensions are made present (CREATE EXTENSION); an extension the
	// operator made and the spec no longer lists is dropped.
	Extensions []string `json:"extensions,omitempty"`
	// Reclaim is Retain ("" too) or Delete.
	Reclaim Reclaim `json:"reclaim,omitempty"`
}

// DatabaseStatus is the database as the operator last saw it.
type DatabaseStatus struct {
	Exists bool   `json:"exists,omitempty"`
	Owner  string `json:"owner,omitempty"`
	// Extensions are the spec's extensions present in the database.
	Extensions []string `json:"extensions,omitempty"`
	// Created: the operator made the database from this store for this
	// key (its mark is on it).
	Created bool `json:"created,omitempty"`
	// External is reconcile/kit/external's record: the database's name,
	// a CREATE DATABASE under way (shown, never trusted: the kit adopts
	// a database found unmarked only by its own record of the create,
	// in Config.IntentDir), the last fingerprint.
	External external.Record `json:"external"`
}

// BackupScheduleSpec backs a database up at the slots of a cron schedule.
type BackupScheduleSpec struct {
	Database string `json:"database"`
	// Schedule is a cron spec (reconcile/kit/schedule.Parse): "0 3 * * *",
	// "@daily", "CRON_TZ=Europe/Paris 30 2 * * *".
	Schedule string `json:"schedule"`
	// KeepSucceeded and KeepFailed are how many of the newest successful
	// and failed backups to keep (reconcile/kit/schedule.Retention): the
	// newest success is always kept, however many newer backups failed.
	KeepSucceeded int `json:"keepSucceeded,omitempty"`
	KeepFailed    int `json:"keepFailed,omitempty"`
	// Method is its backups' method (BackupSpec.Method).
	Method BackupMethod `json:"method,omitempty"`
	// RecoveryWindow, for base backups, is how far back (a Go duration,
	// "168h") every instant stays restorable: retention keeps each base
	// backup and WAL segment a restore to an instant inside it needs
	// (retainBase). Empty: from the newest verified base backup on.
	RecoveryWindow string `json:"recoveryWindow,omitempty"`
}

// BackupScheduleStatus is what the schedule did last.
type BackupScheduleStatus struct {
	// LastSlot is the newest slot that has a backup, NextSlot the next.
	LastSlot time.Time `json:"lastSlot,omitzero"`
	NextSlot time.Time `json:"nextSlot,omitzero"`
	// LastVerified is its newest base backup whose restore drill
	// succeeded: the restore point it proved and the time it took.
	LastVerified *VerifiedRestore `json:"lastVerified,omitempty"`
	// Running is the key of its backup not finished, if any: at most one
	// runs at a time.
	Running string `json:"running,omitempty"`
	// LastSucceeded is the key of its newest successful backup.
	LastSucceeded string `json:"lastSucceeded,omitempty"`
	// Backups counts its backups kept.
	Backups int    `json:"backups,omitempty"`
	Error   string `json:"error,omitempty"`
}

// BackupSpec is one backup of a database: made by a BackupSchedule at a
// slot, or by a user on demand.
type BackupSpec struct {
	// Database is the database dumped (MethodDump), or the one whose
	// contents the restore drill of a base backup checks (MethodBase).
	Database string `json:"database"`
	// Method is how: MethodDump ("" too) or MethodBase.
	Method BackupMethod `json:"method,omitempty"`
}

// BackupMethod is how a backup is made.
type BackupMethod string

const (
	// MethodDump is one pg_dump of the database, checked with
	// pg_restore --list. The default.
	MethodDump BackupMethod = "dump"
	// MethodBase is a base backup of the whole server (pg_basebackup)
	// beside the WAL archive, counted only once a restore drill restored
	// it into a scratch cluster and found the database as it was.
	MethodBase BackupMethod = "base"
)

// method is the spec's method, MethodDump by default, or an error
// matching ErrInvalidSpec.
func (s BackupSpec) method() (BackupMethod, error) {
	switch s.Method {
	case "", MethodDump:
		return MethodDump, nil
	case MethodBase:
		return MethodBase, nil
	}
	return "", fmt.Errorf("%w: method %q: want dump or base", ErrInvalidSpec, s.Method)
}

// BackupPhase is where a backup is.
type BackupPhase string

const (
	BackupRunning   BackupPhase = "Running"
	BackupSucceeded BackupPhase = "Succeeded"
	BackupFailed    BackupPhase = "Failed"
)

// BackupStatus is the backup's intent record and outcome.
type BackupStatus struct {
	Phase BackupPhase `json:"phase,omitempty"`
	// Dump is the intent record of the dump (reconcile/kit/intent): written
	// before pg_dump starts, so that after a crash the attempt is adopted
	// or judged, never run a second time.
	Dump  intent.Record[DumpResult] `json:"dump,omitzero"`
	Error string                    `json:"error,omitempty"`
}

// Finished reports whether the backup has its outcome.
func (s BackupStatus) Finished() bool { return s.Phase == BackupSucceeded || s.Phase == BackupFailed }

// DumpResult is what a backup attempt left: its file, once it was
// written, verified with pg_restore --list and renamed into place, or why
// not; for a base backup, OK only once its restore drill verified it.
type DumpResult struct {
	OK bool `json:"ok"`
	// Base is what a base backup (MethodBase) recorded and its drill
	// measured.
	Base *BaseResult `json:"base,omitempty"`
	// File is the dump's path; Bytes its size; Entries the entries of its
	// table of contents, as pg_restore --list counts them.
	File     string    `json:"file,omitempty"`
	Bytes    int64     `json:"bytes,omitempty"`
	Entries  int       `json:"entries,omitempty"`
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	Error    string    `json:"error,omitempty"`
}

// ErrInvalidSpec matches a spec the operator refuses (and
// store.ErrInvalid, as every converge ErrInvalid does): its object's status
// says why, and it is not retried until it changes.
var ErrInvalidSpec = fmt.Errorf("postgres: invalid spec: %w", store.ErrInvalid)

// identifier is what the operator accepts as a role or database name:
// plain lower-case SQL identifiers, the same unquoted and quoted.
var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// reserved are names the operator never manages.
func reserved(name string) bool {
	return strings.HasPrefix(name, "pg_") || name == "template0" || name == "template1" || name == "postgres" || name == "public"
}

// nameOf returns the PostgreSQL name of key under prefix, or an error
// matching store.ErrInvalid.
func nameOf(prefix, key string) (string, error) {
	name, ok := strings.CutPrefix(key, prefix)
	if !ok || !identifier.MatchString(name) {
		return "", fmt.Errorf("%w: %q: the name after %q must be a lower-case SQL identifier (a-z, 0-9, _; at most 63 bytes)", ErrInvalidSpec, key, prefix)
	}
	if reserved(name) {
		return "", fmt.Errorf("%w: %q: %s is reserved", ErrInvalidSpec, key, name)
	}
	return name, nil
}

// checkNames returns an error matching store.ErrInvalid unless every name
// is an identifier the operator accepts.
func checkNames(what string, names ...string) error {
	for _, n := range names {
		if !identifier.MatchString(n) {
			return fmt.Errorf("%w: %s %q is not a lower-case SQL identifier", ErrInvalidSpec, what, n)
		}
	}
	return nil
}

// maxConnectionLimit is the largest connection limit pg_authid can hold
// (rolconnlimit is an int4): a larger one is not even SQL PostgreSQL reads.
const maxConnectionLimit = math.MaxInt32

// checkRoleNames returns an error matching ErrInvalidSpec unless every name
// is an identifier the operator accepts that names no reserved role: a
// role a spec names as a member, an owner, is never one of the system's.
func checkRoleNames(what string, names ...string) error {
	if err := checkNames(what, names...); err != nil {
		return err
	}
	for _, n := range names {
		if reserved(n) {
			return fmt.Errorf("%w: %s %q is reserved", ErrInvalidSpec, what, n)
		}
	}
	return nil
}

// connectionLimit is the spec's limit as pg_authid keeps it.
func (s RoleSpec) connectionLimit() int {
	if s.ConnectionLimit == nil {
		return -1
	}
	return *s.ConnectionLimit
}

// reclaim is the spec's policy, Retain by default.
func (s DatabaseSpec) reclaim() Reclaim {
	if s.Reclaim == "" {
		return Retain
	}
	return s.Reclaim
}

// validate checks a Database spec.
func (s DatabaseSpec) validate() error {
	if s.Reclaim != "" && s.Reclaim != Retain && s.Reclaim != Delete {
		return fmt.Errorf("%w: reclaim %q: want retain or delete", ErrInvalidSpec, s.Reclaim)
	}
	if s.Owner != "" {
		if err := checkRoleNames("owner", s.Owner); err != nil {
			return err
		}
	}
	for _, e := range s.Extensions {
		if !extensionName.MatchString(e) {
			return fmt.Errorf("%w: extension %q is not an extension name", ErrInvalidSpec, e)
		}
	}
	return nil
}

// extensionName is what the operator accepts as an extension's name
// ("uuid-ossp" has a dash).
var extensionName = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,62}$`)
