package sqlite

import (
	"context"
	"fmt"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/internal/sqlstore"
)

var _ store.Fleet = (*Store)(nil)

// weightsIn reads the weights matching f, ordered by job then newest
// first, keeping f.Newest per job (or overall, if !perJob): SQLite has no
// percentile aggregates, so the store computes them.
func (s *Store) weightsIn(ctx context.Context, f store.WeightFilter, perJob bool) ([][]store.JobWeight, error) {
	where, args := sqlstore.WeightWhere(f)
	order := "ended_at DESC, attempt_id"
	if perJob {
		order = "repository, workflow, job_name, " + order
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+sqlstore.WeightColumns+` FROM job_weights`+where+` ORDER BY `+order, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var groups [][]store.JobWeight
	for rows.Next() {
		var (
			w                           store.JobWeight
			rss, avg, peak, smp, d, end int64
		)
		if err := rows.Scan(&w.Attempt, &w.Policy, &w.Host, &w.Job.Repository, &w.Job.Workflow, &w.Job.Name,
			&rss, &avg, &peak, &smp, &d, &end); err != nil {
			return nil, err
		}
		w.Usage = rm.AttemptUsage{PeakRSSBytes: uint64(rss), CPUAvgMillicores: uint32(avg), CPUPeakMillicores: uint32(peak), Samples: uint32(smp)}
		w.Duration, w.EndedAt = time.Duration(d), time.Unix(0, end).UTC()
		last := len(groups) - 1
		if last < 0 || (perJob && groups[last][0].Job != w.Job) {
			groups = append(groups, nil)
			last++
		}
		if f.Newest <= 0 || len(groups[last]) < f.Newest {
			groups[last] = append(groups[last], w)
		}
	}
	return groups, rows.Err()
}

// Weights implements store.Fleet.
func (s *Store) Weights(ctx context.Context, f store.WeightFilter) (store.Weights, error) {
	groups, err := s.weightsIn(ctx, f, false)
	if err != nil {
		return store.Weights{}, fmt.Errorf("read job weights: %w", err)
	}
	if len(groups) == 0 {
		return store.Weights{}, nil
	}
	return store.SumWeights(groups[0]), nil
}

// HeaviestJobs implements store.Fleet.
func (s *Store) HeaviestJobs(ctx context.Context, f store.WeightFilter) ([]store.JobWeights, error) {
	groups, err := s.weightsIn(ctx, f, true)
	if err != nil {
		return nil, fmt.Errorf("read job weights: %w", err)
	}
	var out []store.JobWeights
	for _, g := range groups {
		out = append(out, store.JobWeights{Job: g[0].Job, Weights: store.SumWeights(g)})
	}
	store.SortHeaviest(out)
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}
