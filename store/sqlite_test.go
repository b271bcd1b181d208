package store_test

import (
	"testing"

	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func TestSQLiteConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return storetest.MustOpen(t) })
}
