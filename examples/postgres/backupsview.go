package main

import (
	"encoding/json"
	"net/http"
)

// This file holds the operator's view of its backups' health: the newest
// restore point a drill proved, and how long that restore took, served at
// BackupsPath beside /healthz.

// BackupsPath is where the daemon serves its backups' health.
const BackupsPath = "/backups"

// BackupsHealth is what BackupsPath answers, as JSON.
type BackupsHealth struct {
	// LastVerified is the newest base backup whose drill succeeded.
	LastVerified *VerifiedRestore `json:"lastVerified,omitempty"`
	// Unverified counts the finished base backups no drill verified.
	Unverified int `json:"unverified"`
}

// lastVerified returns the newest verified base backup among backups, or
// nil.
func lastVerified(backups []verifiedCandidate) *VerifiedRestore {
	var best *VerifiedRestore
	for _, b := range backups {
		res := b.result
		if !res.OK || res.Base == nil || !res.Base.Verified {
			continue
		}
		if best == nil || res.Base.RestorePointTime.After(best.RestorePoint) {
			best = &VerifiedRestore{Backup: b.key, RestorePoint: res.Base.RestorePointTime, RestoreMillis: res.Base.RestoreMillis}
		}
	}
	return best
}

// verifiedCandidate is a finished backup's key and result.
type verifiedCandidate struct {
	key    string
	result DumpResult
}

// backupsHandler serves BackupsHealth from the Backup controller's cache.
func (o *Operator) backupsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var h BackupsHealth
		var all []verifiedCandidate
		for _, obj := range o.Backups.Lister().List() {
			rec := obj.Value.Status.Dump
			if !rec.Done || rec.Result.Base == nil {
				continue
			}
			all = append(all, verifiedCandidate{obj.Key, rec.Result})
			if !rec.Result.OK {
				h.Unverified++
			}
		}
		h.LastVerified = lastVerified(all)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(h)
	})
}
