package boltstore_test

const (
	crashHelperEnv = "BOLTSTORE_CRASH_HELPER"
	lockHelperEnv  = "BOLTSTORE_LOCK_HELPER"
)
