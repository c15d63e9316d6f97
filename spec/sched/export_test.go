package sched

// SetMaskBeforeDrafts turns on the broken masking the distribution test must catch.
func SetMaskBeforeDrafts(on bool) { maskBeforeDrafts = on }
