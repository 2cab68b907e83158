package storage

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQueryPlans_IndexesForScale holds the plans that keep Heed fast at 1,000,000 jobs over
// 100,000 hosts: each query seeks the index named, and none sorts its result in a temporary
// b-tree (which would mean reading every matching row before the first one is returned).
func TestQueryPlans_IndexesForScale(t *testing.T) {
	db, _ := openTest(t)
	q := func(query string, _ []any) string { return query }
	cases := []struct {
		name  string
		query string
		want  string
	}{
		{"load queued jobs by host", qForEachQueued, "COVERING INDEX jobs_state_host_due (state=?)"},
		{"next due of one host", qHostDueJobs, "COVERING INDEX jobs_state_host_due (state=? AND host=?)"},
		{"counts by state", qCountsByState, "COVERING INDEX jobs_state_host_due"},
		{"counts by state: total", qCountsByState, "COVERING INDEX jobs_host"},
		{"counts by host and state", qCountsByHost, "COVERING INDEX jobs_state_host_due"},
		{"counts by host and state: totals", qCountsByHost, "COVERING INDEX jobs_host"},
		{"recover active jobs", qRecover, "INDEX jobs_state_host_due (state=?)"},
		{"job by URL", `SELECT ` + jobCols + ` FROM jobs WHERE url = ?`, "INDEX jobs_url (url=?)"},
		{"jobs page by state", q(JobFilter{State: StateQueued, AfterID: 1, Limit: 100}.query(jobCols)), "INTEGER PRIMARY KEY (rowid>?)"},
		{"jobs of one host", q(JobFilter{Host: "a.example"}.query(jobCols)), "INDEX jobs_host (host=?)"},
		{"jobs of one host in one state", q(JobFilter{Host: "a.example", State: StateDone, AfterID: 9, Limit: 100}.query(jobCols)), "INDEX jobs_host (host=? AND rowid>?)"},
		{"history of a host", q(HistoryFilter{Host: "a.example", Limit: 100}.query()), "attempts_host (host=?)"},
		{"history of a host by outcome", q(HistoryFilter{Host: "a.example", Outcome: "ok", BeforeID: 9, Limit: 100}.query()), "attempts_host (host=? AND id<?)"},
		{"history of successes", q(HistoryFilter{Outcome: "ok", Limit: 100}.query()), "SCAN attempts"},
		{"history by another outcome", q(HistoryFilter{Outcome: "throttled", BeforeID: 9, Limit: 100}.query()), "attempts_outcome (outcome=? AND id<?)"},
		{"history page", q(HistoryFilter{BeforeID: 9, Limit: 100}.query()), "INTEGER PRIMARY KEY (rowid<?)"},
		{"history of a job", q(HistoryFilter{JobID: 1}.query()), "attempts_job (job_id=?)"},
		{"host timeline", qHostEvents, "host_events_host (host=?)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := make([]any, strings.Count(c.query, "?")) // NULLs: the plan does not depend on them
			rows, err := db.r.Query("EXPLAIN QUERY PLAN "+c.query, args...)
			require.NoError(t, err)
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
				plan = append(plan, detail)
			}
			require.NoError(t, rows.Err())
			all := strings.Join(plan, "\n")
			assert.Contains(t, all, c.want)
			assert.NotContains(t, all, "TEMP B-TREE")
		})
	}
}
