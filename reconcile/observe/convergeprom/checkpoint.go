package convergeprom

import (
	"github.com/converge-go/converge/reconcile"
	"github.com/prometheus/client_golang/prometheus"
)

// The checkpoint's series (reconcile.Options.Checkpoint), read at scrape
// time from Health().Checkpoint of a watched controller that has one.
var (
	checkpointActiveDesc = prometheus.NewDesc("converge_checkpoint_active",
		"1 while the controller runs from its checkpoint (its store not listed in time at its start, and not caught up with since), else 0", []string{"controller"}, nil)
	checkpointRevisionDesc = prometheus.NewDesc("converge_checkpoint_revision",
		"Store revision of the checkpoint the controller runs from while active, else of the latest written", []string{"controller"}, nil)
	checkpointAgeDesc = prometheus.NewDesc("converge_checkpoint_age_seconds",
		"Seconds since the controller last heard from its store in the checkpoint it runs from while active, else in the latest written", []string{"controller"}, nil)
	checkpointWritesDesc = prometheus.NewDesc("converge_checkpoint_writes_total",
		"Checkpoints the controller wrote", []string{"controller"}, nil)
	checkpointFailuresDesc = prometheus.NewDesc("converge_checkpoint_write_failures_total",
		"Checkpoint writes that failed (the next write is then a whole one)", []string{"controller"}, nil)
	checkpointDamagedDesc = prometheus.NewDesc("converge_checkpoint_damaged_total",
		"Damaged checkpoints the controller found and ignored", []string{"controller"}, nil)
)

var checkpointDescs = []*prometheus.Desc{checkpointActiveDesc, checkpointRevisionDesc, checkpointAgeDesc,
	checkpointWritesDesc, checkpointFailuresDesc, checkpointDamagedDesc}

// collectCheckpoint sends the checkpoint's series of a controller with a
// checkpoint, none for one without; revision and age only once there is a
// checkpoint, loaded or written.
func collectCheckpoint(ch chan<- prometheus.Metric, name string, h reconcile.Health) {
	st := h.Checkpoint
	if !st.Enabled {
		return
	}
	active := 0.0
	if st.Active {
		active = 1
	}
	gauge(ch, checkpointActiveDesc, active, name)
	if !st.Seen.IsZero() {
		gauge(ch, checkpointRevisionDesc, float64(st.Revision), name)
		gauge(ch, checkpointAgeDesc, st.Age.Seconds(), name)
	}
	total(ch, checkpointWritesDesc, st.Writes, name)
	total(ch, checkpointFailuresDesc, st.Failures, name)
	total(ch, checkpointDamagedDesc, st.Damaged, name)
}

// total sends a counter read at scrape time.
func total(ch chan<- prometheus.Metric, d *prometheus.Desc, n int64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(n), labels...)
}
