package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/internal/sqlstore"
)

var _ store.Fleet = (*Store)(nil)

// percentiles are the aggregates of Weights, in its order, over a set of
// rows: nearest rank, as store.Percentile.
const percentiles = `count(*),
	percentile_disc(0.5) WITHIN GROUP (ORDER BY peak_rss_bytes), percentile_disc(0.9) WITHIN GROUP (ORDER BY peak_rss_bytes),
	percentile_disc(0.5) WITHIN GROUP (ORDER BY cpu_avg_millicores), percentile_disc(0.9) WITHIN GROUP (ORDER BY cpu_avg_millicores),
	percentile_disc(0.5) WITHIN GROUP (ORDER BY cpu_peak_millicores), percentile_disc(0.9) WITHIN GROUP (ORDER BY cpu_peak_millicores),
	percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_ns), percentile_disc(0.9) WITHIN GROUP (ORDER BY duration_ns)`

// weightRows is the FROM source of the weights matching f: the table, or
// for f.Newest only the newest N rows of each group (partition).
func weightRows(f store.WeightFilter, partition string) (string, []any) {
	where, args := sqlstore.WeightWhere(f)
	src := "SELECT * FROM job_weights" + where
	if f.Newest > 0 {
		over := "ORDER BY ended_at DESC, attempt_id"
		if partition != "" {
			over = "PARTITION BY " + partition + " " + over
		}
		src = "SELECT * FROM (SELECT *, row_number() OVER (" + over + ") AS newness FROM (" + src + ") m) n WHERE newness <= ?"
		args = append(args, f.Newest)
	}
	return "(" + src + ") w", args
}

func scanWeights(sc sqlstore.Row, w *store.Weights, extra ...any) error {
	var rss50, rss90, avg50, avg90, pk50, pk90, d50, d90 *int64
	dest := append(extra, &w.Count, &rss50, &rss90, &avg50, &avg90, &pk50, &pk90, &d50, &d90)
	if err := sc.Scan(dest...); err != nil {
		return err
	}
	v := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	w.PeakRSSP50, w.PeakRSSP90 = uint64(v(rss50)), uint64(v(rss90))
	w.CPUAvgP50, w.CPUAvgP90 = uint32(v(avg50)), uint32(v(avg90))
	w.CPUPeakP50, w.CPUPeakP90 = uint32(v(pk50)), uint32(v(pk90))
	w.DurationP50, w.DurationP90 = time.Duration(v(d50)), time.Duration(v(d90))
	return nil
}

// Weights implements store.Fleet, computing the percentiles in the server.
func (s *Store) Weights(ctx context.Context, f store.WeightFilter) (store.Weights, error) {
	from, args := weightRows(f, "")
	var w store.Weights
	if err := scanWeights(db{s.pool}.QueryRow(ctx, `SELECT `+percentiles+` FROM `+from, args...), &w); err != nil {
		return store.Weights{}, fmt.Errorf("read job weights: %w", err)
	}
	return w, nil
}

// HeaviestJobs implements store.Fleet.
func (s *Store) HeaviestJobs(ctx context.Context, f store.WeightFilter) ([]store.JobWeights, error) {
	const key = "repository, workflow, job_name"
	from, args := weightRows(f, key)
	q := `SELECT ` + key + `, ` + percentiles + ` FROM ` + from + ` GROUP BY ` + key +
		` ORDER BY 6 DESC, 4 DESC, ` + key // p90 peak RSS, count
	if f.Limit > 0 {
		args = append(args, f.Limit)
		q += ` LIMIT ?`
	}
	js, err := sqlstore.QueryAll(ctx, db{s.pool}, func(sc sqlstore.Row) (store.JobWeights, error) {
		var j store.JobWeights
		err := scanWeights(sc, &j.Weights, &j.Job.Repository, &j.Job.Workflow, &j.Job.Name)
		return j, err
	}, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read job weights: %w", err)
	}
	return js, nil
}
