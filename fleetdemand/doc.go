// Package fleetdemand serves a fleet policy (rm.Policy.Fleet): one scale set
// that every host sharing a PostgreSQL journal serves. It owns the
// demand source each host's loop of such a policy watches: one host at a
// time holds the fleet's lease (store.FleetSets) and, with it, the scale
// set's message session; that holder tells GitHub the fleet's capacity
// (what every host published it could take) and places each waiting job
// on a host by what the job is expected to weigh, writing every host's
// share under the lease's token. Each host's loop then serves its share
// as it would a scale set of its own: journal first, JIT config, launch.
// A holder that can no longer renew its lease stops serving before the
// lease expires, and the next holder deletes the session it left by the
// id the journal recorded.
package fleetdemand
