package manifest

// PlanParses is the number of YAML documents a plan decoded.
func PlanParses(r Result) int { return r.Parses() }

// IndexParses is the number of YAML documents an index decoded since it was
// made (NewIndex, Add and Apply).
func IndexParses(ix *Index) int { return ix.Parses() }
