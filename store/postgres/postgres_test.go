package postgres_test

import (
	"testing"

	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/postgres"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var _ store.Store = (*postgres.Store)(nil)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return pgtest.MustOpen(t) })
}

func TestFleetConformance(t *testing.T) {
	storetest.RunFleet(t, func(t *testing.T) store.Fleet { return pgtest.MustOpen(t) })
}

func TestFleetSetsConformance(t *testing.T) {
	storetest.RunFleetSets(t, func(t *testing.T) storetest.FleetSetsStore { return pgtest.MustOpen(t) })
}
